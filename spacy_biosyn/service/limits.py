"""What one request may ask of the service, and whence. Each limit is
answered, when passed, with a JSON error naming it: 413 for a body, 422 for
a text or a list, 408 for a client that sends too slowly, 504 for linking
that takes too long, 400 for a Host header the service does not answer
for. Each number has a range a real machine can hold, and `RANGES` gives
it to the command line's options, so both refuse the same values."""
from typing import Dict, Tuple

from pydantic import BaseModel, ConfigDict, Field

# The names a service bound to a loopback address answers for: a page on
# another site that a user opens can reach 127.0.0.1 through DNS rebinding,
# with its own name in the Host header, which this refuses.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
# setting -> (least, most)
RANGES: Dict[str, Tuple[float, float]] = {
    "max_body_bytes": (1_000, 1_000_000_000),
    "max_text_chars": (1, 100_000_000),
    "max_texts": (1, 100_000),
    "max_mentions": (1, 1_000_000),
    "request_timeout_s": (0.001, 86_400),
    "batch_texts": (1, 10_000),
}


def _ranged(default, name: str):
    least, most = RANGES[name]
    return Field(default, ge=least, le=most, allow_inf_nan=False) if isinstance(default, float) else Field(
        default, ge=least, le=most)


class ServiceLimits(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    # A request's body as sent; larger ones are refused before they are read whole.
    max_body_bytes: int = _ranged(2_000_000, "max_body_bytes")
    # One text, in characters (the pipeline's nlp.max_length caps it further).
    max_text_chars: int = _ranged(100_000, "max_text_chars")
    # Texts (or documents of a PubTator or BioC body) in one request.
    max_texts: int = _ranged(64, "max_texts")
    # Mention strings in one request to /link/mentions.
    max_mentions: int = _ranged(1_000, "max_mentions")
    # From the first byte of the body to the answer.
    request_timeout_s: float = _ranged(60.0, "request_timeout_s")
    # Texts of several clients' requests linked in one nlp.pipe call.
    batch_texts: int = _ranged(32, "batch_texts")
    # The Host header's names (without port) the service answers for: "*"
    # any, "*.example.org" that domain's; `serve` on a loopback address
    # defaults to LOOPBACK_HOSTS.
    allowed_hosts: Tuple[str, ...] = ("*",)
    # The web origins whose pages may read answers (CORS); none by default.
    cors_origins: Tuple[str, ...] = ()

    def allows_host(self, header: str) -> bool:
        """Whether a Host header (name, and port or not) is one the service answers for."""
        host = header.strip().lower()
        # the port goes: "127.0.0.1:8080", "[::1]:8080"
        host = host.partition("]")[0] + "]" if host.startswith("[") else host.partition(":")[0]
        for allowed in self.allowed_hosts:
            allowed = allowed.lower()
            if allowed == "*" or host == allowed or (allowed.startswith("*.") and host.endswith(allowed[1:])):
                return True
        return False

"""What one request may ask of the service: each limit's default and the
range a real machine can hold, which the settings (settings.py) and the
command line's options (cli/serve.py) both enforce, so both refuse the same
values. Plain numbers, readable without the serve extra."""
from typing import Dict, NamedTuple


class Bounds(NamedTuple):
    default: float
    least: float
    most: float


LIMITS: Dict[str, Bounds] = {
    # A request's body as sent; larger ones are refused before they are read whole.
    "max_body_bytes": Bounds(2_000_000, 1_000, 1_000_000_000),
    # One text, in characters (the pipeline's nlp.max_length caps it further).
    "max_text_chars": Bounds(100_000, 1, 100_000_000),
    # Texts (or documents of a PubTator or BioC body) in one request.
    "max_texts": Bounds(64, 1, 100_000),
    # Mention strings in one request to /link/mentions.
    "max_mentions": Bounds(1_000, 1, 1_000_000),
    # From the first byte of the body to the answer.
    "request_timeout_s": Bounds(60.0, 0.001, 86_400),
    # Texts of several clients' requests linked in one nlp.pipe call.
    "batch_texts": Bounds(32, 1, 10_000),
}
# The names a service bound to a loopback address answers for: a page on
# another site that a user opens can reach 127.0.0.1 through DNS rebinding,
# with its own name in the Host header, which this refuses.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")

"""The service's settings: its limits (limits.py), each answered, when
passed, with a JSON error naming it (413 for a body, 422 for a text or a
list, 408 for a client that sends too slowly, 504 for linking that takes
too long), and the hosts and origins it answers.

They are pydantic-settings settings: `serve` fills them from its options
and hands them to each worker process through the environment
(SPACY_BIOSYN_SERVE_MAX_TEXTS=64, tuples as JSON lists), where a deployment
that starts uvicorn or gunicorn itself can set them too."""
import json
from typing import Dict, Tuple

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from .limits import LIMITS

ENV_PREFIX = "SPACY_BIOSYN_SERVE_"


def _limit(name: str):
    default, least, most = LIMITS[name]
    if isinstance(default, float):
        return Field(default, ge=least, le=most, allow_inf_nan=False)
    return Field(default, ge=least, le=most)


class ServiceSettings(BaseSettings):
    # Not strict: the environment gives every value as a string.
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid", frozen=True)

    max_body_bytes: int = _limit("max_body_bytes")
    max_text_chars: int = _limit("max_text_chars")
    max_texts: int = _limit("max_texts")
    max_mentions: int = _limit("max_mentions")
    request_timeout_s: float = _limit("request_timeout_s")
    batch_texts: int = _limit("batch_texts")
    # The Host header's names (without port) the service answers for: "*"
    # any, "*.example.org" that domain's; `serve` on a loopback address
    # defaults to limits.LOOPBACK_HOSTS.
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

    def as_environment(self) -> Dict[str, str]:
        """The variables from which `ServiceSettings()` reads these settings back, in a worker process."""
        return {f"{ENV_PREFIX}{name.upper()}": json.dumps(value) for name, value in self.model_dump(mode="json").items()}

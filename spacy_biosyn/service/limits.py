"""What one request may ask of the service. Each limit is answered, when
passed, with a JSON error naming it: 413 for a body, 422 for a text or a
list, 408 for a client that sends too slowly, 504 for linking that takes
too long."""
from pydantic import BaseModel, ConfigDict, Field


class ServiceLimits(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    # A request's body as sent; larger ones are refused before they are read whole.
    max_body_bytes: int = Field(2_000_000, ge=1_000)
    # One text, in characters (the pipeline's nlp.max_length caps it further).
    max_text_chars: int = Field(100_000, ge=1)
    # Texts (or documents of a PubTator or BioC body) in one request.
    max_texts: int = Field(64, ge=1)
    # Mention strings in one request to /link/mentions.
    max_mentions: int = Field(1_000, ge=1)
    # From the first byte of the body to the answer.
    request_timeout_s: float = Field(60.0, gt=0)
    # Texts of several clients' requests linked in one nlp.pipe call.
    batch_texts: int = Field(32, ge=1)

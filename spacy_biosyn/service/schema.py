"""The shapes of the service's requests and answers, as its OpenAPI schema
documents them. An entity is the row `link --json` and `link-corpus` write."""
from typing import Dict, List, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator



class Candidate(BaseModel):
    id: str = Field(description="A concept ID, with its namespace where the pipeline declares one (MESH:D001943)")
    name: str = Field(description="The concept's name that the mention matched best (lower-cased, as searched)")
    concept_name: Optional[str] = Field(description="The concept's canonical name, as its vocabulary writes it")
    score: float = Field(description="The concept's score, S = dense + lambda x tf-idf, scaled to [0, 1]")


class NilBest(BaseModel):
    id: str = Field(description="The concept a NIL entity would have linked to ('|' joins a composite's)")
    concept_name: Optional[str] = Field(description="Its canonical name (null for a composite)")
    score: float = Field(description="The link score that nil_threshold or the NIL model turned down")


class Tie(BaseModel):
    ids: List[str] = Field(description="The concepts that share the entity's best name, the chosen one first")
    rule: str = Field(description="What chose it: document (the rest of the text names it), annotated_corpus (the "
                      "annotators of preferred_ids_from used it most), own_names (its other names rank nearer the "
                      "mention), vocabulary_order (none of these)")


class Entity(BaseModel):
    start: int = Field(description="Character offset of the entity's first character in the text")
    end: int = Field(description="Character offset just after the entity's last character")
    text: str = Field(description="The entity as written")
    label: str = Field(description="The entity's label (Disease, Chemical)")
    id: Optional[str] = Field(description="span._.cui: the concept's ID, or null where the entity is NIL (nil_reason says why)")
    score: Optional[float] = Field(description="The link's score, which nil_threshold is compared with; null for NIL")
    nil_reason: Optional[str] = Field(description="span._.nil_reason: why the entity is NIL (everyday_english, "
                                      "no_candidates, below_threshold, absent_concept); null where it is linked")
    nil_best: Optional[NilBest] = Field(description="span._.nil_best: for a NIL entity, the best concept and its "
                                        "score (null where linked, or where nothing was ranked)")
    ties: List[Tie] = Field(description="span._.ties: per part whose best name several concepts share, those "
                            "concepts and the rule that chose (empty where none)")
    candidates: List[Candidate] = Field(description="span._.kb_ents: the ranked concepts, best first (empty for NIL)")


class GivenEntity(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    start: int = Field(description="Character offset of the entity's first character in the text")
    end: int = Field(description="Character offset just after its last character")
    label: str = Field(description="Its label, which picks the vocabulary that links it (Disease, Chemical)")


class LinkRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    text: Optional[str] = Field(None, description="One text to find and link entities in")
    texts: Optional[List[str]] = Field(None, description="Several texts, each answered in order")
    entities: Optional[List[GivenEntity]] = Field(None, description="The entities of 'text', which the linker links "
                                                  "in its context instead of finding its own (no NER is run)")

    @model_validator(mode="after")
    def _one_of(self) -> "LinkRequest":
        if (self.text is None) == (self.texts is None):
            raise ValueError("give either 'text' (a string) or 'texts' (a list of strings)")
        if self.entities is not None and self.text is None:
            raise ValueError("'entities' are those of 'text': give them with 'text', not 'texts'")
        return self


class LinkedText(BaseModel):
    entities: List[Entity] = Field(description="The text's entities in order of their offsets")


class LinkedTexts(BaseModel):
    documents: List[LinkedText] = Field(description="One per text of 'texts', in the same order")


class MentionsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    mentions: List[str] = Field(description="Mention strings, each linked as one whole entity (no NER)")


class LinkedMentions(BaseModel):
    mentions: List[Entity] = Field(description="One per mention, in order; an empty mention gives no entity")


class ErrorDetail(BaseModel):
    code: str = Field(description="What went wrong, for programs: body_too_large, text_too_long, invalid_request, ...")
    message: str = Field(description="What went wrong and what to do, for people")


class ErrorBody(BaseModel):
    error: ErrorDetail


class Health(BaseModel):
    status: str = Field(description="'ok' while the linking thread runs")


class Info(BaseModel):
    pipeline: Dict[str, object] = Field(description="The pipeline's name, version, language and components")
    linker: Dict[str, object] = Field(description="The vocabulary (its name, or its file's name), names and concepts, encoder, settings, and nil: each route's resolved NIL threshold, where it came from and its open-world model")
    limits: Dict[str, object] = Field(description="What one request may ask, and the hosts and origins answered (ServiceSettings)")
    versions: Dict[str, str] = Field(description="Versions of spacy-biosyn, spaCy, Python and the encoder's runtime")
    concept_pages: Dict[str, object] = Field(description="kb_url's tables: the page of an ID of each namespace ({} is the local ID), and the patterns that give a bare ID its namespace")

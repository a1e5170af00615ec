"""Scripts that assert rather than measure: thousands of fuzz cases, saves
killed midway, hostile text, nlp.pipe across processes. Each prints, case
by case, what held and what did not."""

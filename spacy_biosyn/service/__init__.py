"""The linking service: a saved pipeline behind a JSON API and a page
(`python -m spacy_biosyn serve`). `limits` says what one request may ask,
`schema` the shapes requests and answers take, `formats` PubTator and BioC
bodies, `batching` the thread that runs the pipeline on the requests of
every client together, and `app` puts them behind HTTP."""

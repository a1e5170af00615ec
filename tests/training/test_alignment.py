"""SapBERT's self-alignment (pretrain-encoder) on a tiny vocabulary."""
import json
import random

import numpy as np
import pytest
from typer.testing import CliRunner

from spacy_biosyn.cli import app
from spacy_biosyn.encoders.transformer import TransformerEncoder
from spacy_biosyn.kb.dictionary import Dictionary
from spacy_biosyn.training.alignment import concept_groups, positive_pairs


def test_a_multi_id_name_is_one_concept_and_a_mention_under_its_other_id_joins_it():
    dictionary = Dictionary.from_pairs(
        [("C567755|OMIM:613097", "tooth agenesis selective 6"), ("D001943", "breast cancer"), ("D001943", "mammary carcinoma")]
    )
    groups = sorted(map(sorted, concept_groups(dictionary, [("sthag6", "613097"), ("new disease", "D999999")])))
    assert groups == [["breast cancer", "mammary carcinoma"], ["new disease"], ["sthag6", "tooth agenesis selective 6"]]


def test_concepts_that_share_a_secondary_id_stay_apart():
    # MEDIC lists some diseases under one shared OMIM ID; they are still different concepts.
    dictionary = Dictionary.from_pairs(
        [("D001714|OMIM:125480", "bipolar disorder"), ("C537199|OMIM:125480", "major affective disorder 1")]
    )
    assert sorted(map(sorted, concept_groups(dictionary, [("manic depression", "D001714")]))) == [
        ["bipolar disorder", "manic depression"], ["major affective disorder 1"]
    ]


def test_pretraining_leaves_composite_and_cuiless_mentions_out(tmp_path):
    from spacy_biosyn.corpora.readers import read_concept_queries
    from spacy_biosyn.training.candidates import training_pairs

    (tmp_path / "1.concept").write_text(
        "1||0|25||CompositeMention||breast and ovarian cancer||D001943|D010051\n"
        "1||30|40||SpecificDisease||unknownoma||-1\n"
        "1||50|62||SpecificDisease||mammary tumour||D001943\n"
    )
    dictionary = Dictionary.from_pairs([("D001943", "breast cancer"), ("D010051", "ovarian cancer")])
    groups = concept_groups(dictionary, training_pairs(read_concept_queries(tmp_path)))
    assert sorted(map(sorted, groups)) == [["breast cancer", "mammary tumour"], ["ovarian cancer"]]


def test_an_ambiguous_name_is_in_each_of_its_concepts():
    dictionary = Dictionary.from_pairs([("D006973", "hpp"), ("D006973", "hypertension"), ("D034141", "hpp")])
    assert sorted(map(sorted, concept_groups(dictionary))) == [["hpp"], ["hpp", "hypertension"]]


def test_every_name_with_a_synonym_is_paired_with_another_name_of_its_concept():
    groups = [["breast cancer", "breast neoplasms", "mammary carcinoma"], ["gout"], ["type 2 diabetes", "t2d"]]
    pairs = positive_pairs(groups, random.Random(0))
    assert sorted(a for a, _, _ in pairs) == sorted(groups[0] + groups[2])
    for a, b, concept in pairs:
        assert a != b and {a, b} <= set(groups[concept])


def _synonym_margin(encoder_dir, dictionary_path):
    """Mean cosine of synonyms minus that of names of different concepts."""
    dictionary = Dictionary.from_file(dictionary_path)
    vectors = TransformerEncoder(str(encoder_dir), pooling="mean").load().encode(list(dictionary.names))
    cuis = [ids[0][0] for ids in dictionary.concepts]
    same = np.equal.outer(cuis, cuis) & ~np.eye(len(cuis), dtype=bool)
    other = ~np.equal.outer(cuis, cuis)
    similarity = vectors @ vectors.T
    return similarity[same].mean() - similarity[other].mean()


def test_pretrain_encoder_pulls_synonyms_together_and_saves_an_encoder_folder(tiny_encoder, disease_dictionary, tmp_path):
    args = [
        "pretrain-encoder", "configs/pretrain-encoder.cfg", "--output", str(tmp_path / "aligned"), "--gpu-id", "-1",
        "--paths.dictionary", disease_dictionary, "--encoder.name", tiny_encoder,
        # A random BERT's [CLS] is one vector for every input: mean pooling gives alignment something to move.
        "--encoder.pooling", "mean", "--pretraining.learning_rate", "0.001", "--pretraining.batch_size", "8", "--pretraining.epochs", "40",
        "--pretraining.max_steps", "30", "--pretraining.log_every", "10",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    log = [json.loads(line) for line in (tmp_path / "aligned" / "log.jsonl").read_text().splitlines()]
    assert [record["step"] for record in log] == [10, 20, 30]
    assert _synonym_margin(tmp_path / "aligned" / "encoder", disease_dictionary) > _synonym_margin(
        tiny_encoder, disease_dictionary
    ) + 0.05


def test_a_vocabulary_without_synonyms_is_refused(tiny_encoder, tmp_path):
    path = tmp_path / "one-name-each.txt"
    path.write_text("D001943||breast cancer\nD010051||ovarian cancer\n")
    args = [
        "pretrain-encoder", "configs/pretrain-encoder.cfg", "--output", str(tmp_path / "out"),
        "--paths.dictionary", str(path), "--encoder.name", tiny_encoder,
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert "no concept has two names" in str(result.exception)


@pytest.mark.parametrize("override", [["--pretraining.batch_size", "1"], ["--pretraining.temperature", "0.05"]])
def test_bad_pretraining_settings_are_named(tiny_encoder, disease_dictionary, tmp_path, override):
    args = [
        "pretrain-encoder", "configs/pretrain-encoder.cfg", "--output", str(tmp_path / "out"),
        "--paths.dictionary", disease_dictionary, "--encoder.name", tiny_encoder, *override,
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert override[0].split(".")[-1] in str(result.exception)

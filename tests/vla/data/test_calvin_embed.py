"""CALVIN's sentence embeddings from a local sentence-transformers checkpoint: ``language.emb`` and the
validation split's ``embeddings.npy`` in the shapes CALVIN's loaders read, mean pooling as
sentence-transformers computes it, and one-line refusals of checkpoints it does not compute."""

import json
import shutil

import numpy as np
import pytest

from envs.calvin.instructions import CALVIN_TASKS, EVAL_INSTRUCTIONS
from envs.files import load_pickled_npy
from policies.config_cli import InputError, run_cli
from tests.vla_helpers import tiny_sentence_encoder
from vla.data.calvin import LANG_FILE, load_language
from vla.data.calvin_embed import (
    EMBEDDINGS_FILE,
    SentenceEncoder,
    embed,
    encoder_layout,
    main,
    write_embeddings,
)

SENTENCES = ["open the drawer", "push the sliding door to the left side", "open the drawer"]


@pytest.fixture(scope="module")
def encoder(sentence_encoder):
    return SentenceEncoder(sentence_encoder)


def _annotations(split, sentences):
    """A split's ``auto_lang_ann.npy`` only (embedding reads no frame)."""
    (split / "lang_annotations").mkdir(parents=True)
    ann = {
        "language": {"ann": list(sentences), "task": ["open_drawer"] * len(sentences)},
        "info": {"episodes": [], "indx": [(10 * i, 10 * i + 5) for i in range(len(sentences))]},
    }
    np.save(split / LANG_FILE, np.asarray(ann, dtype=object), allow_pickle=True)


def test_mean_pooling_matches_a_hand_computation(encoder, sentence_encoder):
    """One sentence alone through the model, its token vectors averaged by hand, equals its row when it is
    encoded beside a longer sentence (so its padding is masked out of the mean)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(sentence_encoder, local_files_only=True)
    model = AutoModel.from_pretrained(sentence_encoder, local_files_only=True).eval()
    tokens = tokenizer(["open the drawer"], return_tensors="pt")
    with torch.no_grad():
        hand = model(**tokens).last_hidden_state[0].mean(0).numpy()
    rows = encoder.encode(["open the drawer", "take the red block and rotate it to the right"])
    assert tokens["input_ids"].shape[1] < len(tokenizer(["take the red block and rotate it to the right"])[0])
    np.testing.assert_allclose(rows[0], hand, rtol=0, atol=1e-5)
    assert rows.dtype == np.float32 and rows.shape == (2, 32)


def test_calvin_shape_and_equal_sentences_equal_vectors(encoder):
    vectors = embed(encoder, SENTENCES)
    assert vectors.shape == (3, 1, 32) and vectors.dtype == np.float32
    assert np.array_equal(vectors[0], vectors[2]) and not np.allclose(vectors[0], vectors[1])
    assert embed(encoder, []).shape == (0, 1, 32)


def test_validation_split_gets_emb_and_calvins_embeddings_file(encoder, tmp_path):
    split = tmp_path / "validation"
    _annotations(split, SENTENCES)
    assert write_embeddings(split, encoder) == 3
    data = load_pickled_npy(split / LANG_FILE)  # the project's restricted reader takes float32 arrays
    np.testing.assert_array_equal(data["language"]["emb"], embed(encoder, SENTENCES))
    assert data["language"]["ann"] == SENTENCES and load_language(split)[1] == SENTENCES
    table = load_pickled_npy(split / EMBEDDINGS_FILE)
    assert list(table) == list(CALVIN_TASKS)
    # CALVIN's rollouts key the vectors by the first annotation, squeeze(0) giving (1, D)
    by_sentence = {v["ann"][0]: v["emb"] for v in table.values()}
    assert set(by_sentence) == set(EVAL_INSTRUCTIONS.values())
    vector = by_sentence[EVAL_INSTRUCTIONS["open_drawer"]]
    assert vector.shape == (1, 1, 32) and vector.dtype == np.float32 and vector.squeeze(0).shape == (1, 32)
    np.testing.assert_array_equal(vector[0, 0], encoder.encode([EVAL_INSTRUCTIONS["open_drawer"]])[0])


def test_the_command_embeds_every_split_and_validation_only_gets_the_table(
    sentence_encoder, tmp_path, capsys
):
    for name in ("training", "validation"):
        _annotations(tmp_path / name, SENTENCES[:2])
    assert run_cli(main, ["--data", str(tmp_path), "--lang-encoder", str(sentence_encoder)]) == 0
    assert "2 annotations embedded" in capsys.readouterr().out
    for name in ("training", "validation"):
        assert load_pickled_npy(tmp_path / name / LANG_FILE)["language"]["emb"].shape == (2, 1, 32)
    assert (tmp_path / "validation" / EMBEDDINGS_FILE).is_file()
    assert not (tmp_path / "training" / EMBEDDINGS_FILE).exists()
    assert run_cli(main, ["--data", str(tmp_path / "training"), "--lang-encoder", str(sentence_encoder)]) == 0


def test_embeddings_of_another_length_are_refused_by_the_reader(encoder, tmp_path):
    _annotations(tmp_path, SENTENCES)
    write_embeddings(tmp_path, encoder)
    data = load_pickled_npy(tmp_path / LANG_FILE)
    data["language"]["emb"] = data["language"]["emb"][:2]
    np.save(tmp_path / LANG_FILE, np.asarray(data, dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="2 embeddings"):
        load_language(tmp_path)


def _one_line(path, word):
    with pytest.raises(InputError) as err:
        encoder_layout(path)
    message = str(err.value)
    assert "\n" not in message and "--lang-encoder" in message and word in message, message


def test_checkpoints_it_does_not_compute_are_refused_in_one_line(sentence_encoder, tmp_path):
    _one_line(tmp_path / "missing", "not a folder")
    _one_line(tiny_sentence_encoder(tmp_path / "max", pooling="max_tokens"), "pooling_mode_max_tokens")
    _one_line(tiny_sentence_encoder(tmp_path / "cls", pooling="cls_token"), "pooling_mode_cls_token")
    no_model = tmp_path / "no_model"
    shutil.copytree(sentence_encoder, no_model)
    (no_model / "model.safetensors").unlink()
    _one_line(no_model, "no transformers model")
    dense = tmp_path / "dense"
    shutil.copytree(sentence_encoder, dense)
    modules = json.loads((dense / "modules.json").read_text())
    modules.append({"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    (dense / "modules.json").write_text(json.dumps(modules))
    _one_line(dense, "Dense")
    (dense / "modules.json").write_text("[{")
    _one_line(dense, "modules.json")


def test_sentence_transformers_6_folders_are_read_too(sentence_encoder, tmp_path):
    """Version 6 names its module classes by their new homes and writes ``"pooling_mode": "mean"``; the
    embeddings are the same (checked against sentence-transformers 6.2.0 when this was written: the
    published checkpoints use the older layout, the tiny one here both)."""
    folder = shutil.copytree(sentence_encoder, tmp_path / "v6")
    modules = json.loads((folder / "modules.json").read_text())
    modules[0]["type"] = "sentence_transformers.base.modules.transformer.Transformer"
    modules[1]["type"] = "sentence_transformers.sentence_transformer.modules.pooling.Pooling"
    (folder / "modules.json").write_text(json.dumps(modules))
    pooling = folder / "1_Pooling" / "config.json"
    pooling.write_text(
        json.dumps({"embedding_dimension": 32, "pooling_mode": "mean", "include_prompt": True})
    )
    old = SentenceEncoder(sentence_encoder).encode(SENTENCES)
    np.testing.assert_array_equal(SentenceEncoder(folder).encode(SENTENCES), old)
    pooling.write_text(json.dumps({"embedding_dimension": 32, "pooling_mode": "cls"}))
    _one_line(folder, "cls")

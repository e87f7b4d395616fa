"""Nothing loaded from a file runs code: crafted pickles are refused with one line naming the file, plain data
loads; atomic writes give files the umask-based mode of a plain ``open()``."""

import os
import pickle
import stat

import numpy as np
import pytest

from envs.files import UnsafePickleError, atomic_write_text, file_mode, load_pickled_npy, safe_unpickle
from tests.vla_helpers import write_calvin_split
from vla.data.calvin import LANG_FILE, CalvinDataset, load_language


class _RunsCommand:
    """Pickles as a call to ``os.system``: unpickling it without an allow-list runs the command."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


class _Evals:
    def __init__(self, code):
        self.code = code

    def __reduce__(self):
        return eval, (self.code,)


def _crafted_annotations(path, payload):
    """A CALVIN-looking ``auto_lang_ann.npy`` whose pickle carries ``payload`` inside the real layout."""
    ann = {
        "language": {"ann": ["open the drawer"], "task": ["open_drawer"], "emb": payload},
        "info": {"episodes": [], "indx": [(0, 11)]},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, np.asarray(ann, dtype=object), allow_pickle=True)


@pytest.mark.parametrize(
    "make_payload",
    [
        lambda marker: _RunsCommand(f"touch {marker}"),
        lambda marker: _Evals(f"open({str(marker)!r}, 'w').close()"),
    ],
)
def test_crafted_language_file_runs_nothing_and_names_the_file(tmp_path, make_payload):
    marker = tmp_path / "created-by-the-pickle"
    path = tmp_path / "split" / LANG_FILE
    _crafted_annotations(path, make_payload(marker))
    with pytest.raises(UnsafePickleError) as err:
        load_language(tmp_path / "split")
    message = str(err.value)
    assert not marker.exists()
    assert "\n" not in message and str(path) in message and "not plain data" in message
    assert ("posix.system" in message) or ("builtins.eval" in message)


def test_crafted_file_refused_by_the_dataset_too(tmp_path):
    """The path ``python -m vla.train --data`` takes: opening the dataset reads the annotations."""
    marker = tmp_path / "created"
    write_calvin_split(tmp_path / "split", [(0, 11)], [(0, 11, "open_drawer", "open the drawer")])
    _crafted_annotations(tmp_path / "split" / LANG_FILE, _RunsCommand(f"touch {marker}"))
    with pytest.raises(UnsafePickleError, match=r"auto_lang_ann\.npy"):
        CalvinDataset(tmp_path / "split")
    assert not marker.exists()


def test_benign_dict_of_arrays_and_strings_loads(tmp_path):
    emb = np.random.default_rng(0).normal(size=(3, 1, 384)).astype(np.float32)
    data = {
        "language": {"ann": ["a", "b", "c"], "task": ["x", "y", "z"], "emb": emb},
        "info": {"episodes": [], "indx": [(np.int64(0), 9), (10, 19), (20, 29)]},
        "extra": {
            "ids": {1, 2},
            "scale": 0.5,
            "flag": True,
            "none": None,
            "raw": b"\x00\x01",
            "objects": np.asarray(["s", 1], dtype=object),
        },
    }
    path = tmp_path / "ann.npy"
    np.save(path, np.asarray(data, dtype=object), allow_pickle=True)
    loaded = load_pickled_npy(path)
    np.testing.assert_array_equal(loaded["language"]["emb"], emb)
    assert loaded["language"]["emb"].dtype == np.float32
    assert loaded["info"]["indx"] == [(0, 9), (10, 19), (20, 29)]
    assert loaded["extra"]["ids"] == {1, 2} and loaded["extra"]["raw"] == b"\x00\x01"
    assert loaded["extra"]["objects"].tolist() == ["s", 1]
    write_calvin_split(tmp_path / "split", [(0, 11)], [(0, 11, "open_drawer", "open the drawer")])
    assert load_language(tmp_path / "split") == ([(0, 11)], ["open the drawer"], ["open_drawer"])


def test_plain_arrays_and_broken_files(tmp_path):
    np.save(tmp_path / "ids.npy", np.arange(6).reshape(3, 2))
    np.testing.assert_array_equal(load_pickled_npy(tmp_path / "ids.npy"), np.arange(6).reshape(3, 2))
    (tmp_path / "junk.npy").write_bytes(b"not numpy at all")
    with pytest.raises(ValueError, match=r"junk\.npy: not a NumPy \.npy file"):
        load_pickled_npy(tmp_path / "junk.npy")


def test_unpickler_refuses_classes_and_reports_truncation(tmp_path):
    import collections
    import io

    with pytest.raises(UnsafePickleError, match=r"collections\.OrderedDict"):
        safe_unpickle(io.BytesIO(pickle.dumps(collections.OrderedDict(a=1))), "x.pkl")
    with pytest.raises(ValueError, match=r"x\.pkl: not a readable pickle"):
        safe_unpickle(io.BytesIO(pickle.dumps({"a": [1, 2, 3]})[:-4]), "x.pkl")


def test_libero_initial_states_load_arrays_and_refuse_code(tmp_path):
    torch = pytest.importorskip("torch")
    from envs.libero.tasks import LiberoTask, load_init_states

    def task(path):
        return LiberoTask("libero_goal", 0, "t", "do it", tmp_path / "t.bddl", path)

    states = np.random.default_rng(0).normal(size=(50, 79))
    torch.save(states, tmp_path / "good.pruned_init")  # how LIBERO stores them: a pickled numpy array
    np.testing.assert_array_equal(load_init_states(task(tmp_path / "good.pruned_init")), states)
    marker = tmp_path / "created"
    torch.save([_RunsCommand(f"touch {marker}")], tmp_path / "bad.pruned_init")
    with pytest.raises(ValueError, match=r"bad\.pruned_init: refused to load") as err:
        load_init_states(task(tmp_path / "bad.pruned_init"))
    assert not marker.exists() and "\n" not in str(err.value)


def test_atomic_writes_get_the_umask_mode(tmp_path):
    previous = os.umask(0o027)
    try:
        from envs.files import process_umask

        process_umask.cache_clear()
        path = atomic_write_text(tmp_path / "out" / "summary.json", "{}\n")
        assert stat.S_IMODE(path.stat().st_mode) == 0o640 == file_mode()
        assert path.read_text() == "{}\n" and [p.name for p in path.parent.iterdir()] == ["summary.json"]
    finally:
        os.umask(previous)
        process_umask.cache_clear()
    assert stat.S_IMODE(atomic_write_text(tmp_path / "b.txt", "x").stat().st_mode) == 0o666 & ~previous
    from benchmarks.core.rundir import (
        write_json,  # manifest.json, summary.json and results.json go through it
    )

    write_json(tmp_path / "run" / "summary.json", {"score": 1.0})
    assert stat.S_IMODE((tmp_path / "run" / "summary.json").stat().st_mode) == 0o666 & ~previous


def test_tiny_model_cache_folders_get_the_umask_mode(tmp_path, monkeypatch):
    """``mkdtemp`` makes its folder 0700; the renamed cache entry must be readable like any folder."""
    import policies.tiny as tiny

    def build(arch, out, seed):  # the folder handling is under test, not the model
        (out / "config.json").write_text("{}")

    monkeypatch.setattr(tiny, "build_tiny_vlm", build)
    previous = os.umask(0o022)
    try:
        from envs.files import process_umask

        process_umask.cache_clear()
        target = tiny.cached_tiny_vlm("qwen2_5_vl", 0, tmp_path)
    finally:
        os.umask(previous)
        process_umask.cache_clear()
    assert stat.S_IMODE(target.stat().st_mode) == 0o755 and (target / "config.json").is_file()

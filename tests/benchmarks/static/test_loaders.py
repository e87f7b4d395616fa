"""Loaders read small files in each benchmark's real format and reject bad data with clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.scoring.units import Quantity
from benchmarks.static import benchmark_names, get_benchmark
from benchmarks.static.items import DataError
from benchmarks.static.registry import LoadOptions
from tests.static_helpers import (
    multihop_rows,
    png_bytes,
    space10_rows,
    spatialscore_rows,
    spatialtree_rows,
    write_multihop,
    write_parquet,
    write_png,
    write_space10,
    write_spatialscore,
    write_spatialtree,
)


def load(name: str, path: Path, **options) -> list:
    return get_benchmark(name).load(path, LoadOptions(**options))


def test_registry_lists_the_five_benchmarks() -> None:
    assert benchmark_names() == ["multihopspatial", "space10", "spatialscore", "spatialtree", "vsibench"]
    with pytest.raises(KeyError, match="registered: multihopspatial"):
        get_benchmark("vsi-bench")
    with pytest.raises(KeyError, match="choose one of project, spatialscore-repo"):
        get_benchmark("spatialscore").mode("official")


# --------------------------------------------------------------------------------------------------------
# SpatialScore


def test_spatialscore_single_multi_and_video_items(tmp_path: Path) -> None:
    path = write_spatialscore(tmp_path)
    items = load("spatialscore", path)
    assert [i.item_id for i in items] == ["258", "8740", "12603", "18025"]
    mcq, multi, judgment, video = items
    assert mcq.task == "mcq" and mcq.options == {"A": "Left", "B": "Right"} and mcq.meta["key"] == "A"
    assert multi.modality == "multi-image" and len(multi.media) == 2 and multi.meta["key"] == "A"
    assert judgment.task == "judgment" and judgment.meta["key"] == "no"
    # unit from the question
    assert video.modality == "video" and len(video.media) == 3 and video.meta["key"] == Quantity(2.0, "m")
    # "./dataset/..." paths resolved from the repository root
    assert all(Path(m).is_file() for m in video.media)
    assert mcq.category == "Others" and mcq.tags["source"] == "MMVP"


def test_spatialscore_reads_jsonl_and_explicit_image_root(tmp_path: Path) -> None:
    write_spatialscore(tmp_path)
    jsonl = tmp_path / "items.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in spatialscore_rows()))
    assert len(load("spatialscore", jsonl, image_root=tmp_path)) == 4


def test_spatialscore_errors_name_the_item_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist; pass --data"):
        load("spatialscore", tmp_path / "nope.json")
    rows = spatialscore_rows()
    del rows[1]["question_type"]
    with pytest.raises(DataError, match=r"item 8740: missing field\(s\) question_type"):
        load("spatialscore", write_spatialscore(tmp_path / "a", rows))
    rows = spatialscore_rows()
    rows[0]["question_type"] = "essay"
    with pytest.raises(DataError, match="item 258: question_type 'essay' is not one of"):
        load("spatialscore", write_spatialscore(tmp_path / "b", rows))
    rows = spatialscore_rows()
    rows[0]["answer"] = "the elderly go left"
    with pytest.raises(
        DataError, match=r"item 258: multi-choice answer .* neither an option letter nor an option's text"
    ):
        load("spatialscore", write_spatialscore(tmp_path / "c", rows))
    path = write_spatialscore(tmp_path / "d")
    (tmp_path / "d" / "dataset" / "MMIU" / "a_1.jpg").unlink()
    with pytest.raises(
        DataError, match=r"item 8740: media file './dataset/MMIU/a_1.jpg' not found .* pass --image-root"
    ):
        load("spatialscore", path)
    # scoring saved predictions needs no images
    assert len(load("spatialscore", path, check_media=False)) == 4
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "x.json").write_text('{"not": "a list"}')
    with pytest.raises(DataError, match="expected a JSON list of objects"):
        load("spatialscore", tmp_path / "e" / "x.json")


def test_duplicate_ids_are_rejected(tmp_path: Path) -> None:
    rows = spatialscore_rows()
    rows[1]["index"] = 258
    with pytest.raises(DataError, match="item id '258' appears at rows 0 and 1"):
        load("spatialscore", write_spatialscore(tmp_path, rows))


# --------------------------------------------------------------------------------------------------------
# SpaCE-10


def test_space10_lmms_eval_parquet_folders(tmp_path: Path) -> None:
    items = load("space10", write_space10(tmp_path))
    by_id = {i.item_id: i for i in items}
    assert sorted(by_id) == ["double-choice/ep_double/test:0", "eq_single/test:0", "eq_single/test:1"]
    eq, sa, ep = by_id["eq_single/test:0"], by_id["eq_single/test:1"], by_id["double-choice/ep_double/test:0"]
    assert (eq.task, eq.category, eq.meta["key"], eq.tags["answer_kind"]) == ("mcq", "EQ", ("B",), "single")
    assert eq.tags["capabilities"] == ["C1", "C2", "C5", "C7", "C8"]
    assert isinstance(eq.media[0], bytes) and len(eq.media) == 2 and eq.modality == "multi-image"
    assert sa.category == "SA" and sa.options["B"] == "The door is wider than the TV."
    assert (ep.task, ep.meta["key"], ep.tags["answer_kind"], sorted(ep.options)) == (
        "multi_answer",
        ("B", "E"),
        "multiple",
        list("ABCDE"),
    )


def test_space10_json_with_paths_and_qa_type_from_folder(tmp_path: Path) -> None:
    folder = tmp_path / "sq_single"
    rows = [{**r, "image": ["frames/0.png", "frames/1.png"]} for r in space10_rows(False)]
    for row in rows:
        row.pop("category")
    folder.mkdir(parents=True)
    (folder / "data.json").write_text(json.dumps(rows))
    write_png(folder / "frames" / "0.png")
    write_png(folder / "frames" / "1.png")
    items = load("space10", folder / "data.json")
    assert [i.category for i in items] == ["SQ", "SQ"] and all(Path(m).is_file() for m in items[0].media)


def test_space10_errors(tmp_path: Path) -> None:
    rows = [{**space10_rows(False)[0], "category": "misc"}]
    write_parquet(tmp_path / "a" / "part.parquet", rows)
    with pytest.raises(DataError, match=r"cannot tell the QA type .* add a qa_type column"):
        load("space10", tmp_path / "a")
    rows = [{**space10_rows(False)[0], "answer": "F"}]
    write_parquet(tmp_path / "eq_single" / "t.parquet", rows)
    with pytest.raises(
        DataError, match=r"item 0: answer 'F' names option\(s\) \['F'\] the item does not have"
    ):
        load("space10", tmp_path / "eq_single")


# --------------------------------------------------------------------------------------------------------
# MultihopSpatial


def test_multihop_json_with_images(tmp_path: Path) -> None:
    items = load("multihopspatial", write_multihop(tmp_path))
    first, second = items
    assert (
        first.options == {"A": "fork", "B": "knife", "C": "coffee cup", "D": "apple"}
        and first.meta["key"] == "A"
    )
    assert first.meta["image_size"] == (640, 480) and first.meta["gt_xywh"] == [450.39, 274.87, 189.13, 99.46]
    assert (first.category, second.category) == ("1Hop-Ego", "3Hop-Exo")
    assert second.tags == {"hop": 3, "view": "exo"} and second.meta["key"] == "B"


def test_multihop_size_from_image_and_errors(tmp_path: Path) -> None:
    rows = multihop_rows()
    rows[0].pop("image_resolution")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "t.json").write_text(json.dumps(rows))
    write_png(tmp_path / "a" / "images" / rows[0]["image_path"], 64, 48)
    write_png(tmp_path / "a" / "images" / rows[1]["image_path"], 64, 48)
    assert load("multihopspatial", tmp_path / "a" / "t.json")[0].meta["image_size"] == (64, 48)
    (tmp_path / "a" / "images" / rows[0]["image_path"]).unlink()
    with pytest.raises(DataError, match="item 13: no image_resolution and the image cannot be read"):
        load(
            "multihopspatial",
            tmp_path / "a" / "t.json",
            image_root=tmp_path / "a" / "images",
            check_media=False,
        )
    bad = multihop_rows()
    bad[1]["bbox"] = [1, 2, 3]
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "t.json").write_text(json.dumps(bad))
    with pytest.raises(DataError, match=r"item 3657: bbox must be four numbers \[x, y, w, h\]"):
        load("multihopspatial", tmp_path / "b" / "t.json", check_media=False)


def test_multihop_reads_the_upstream_excerpt_without_images() -> None:
    items = load(
        "multihopspatial", Path("/work/shared/data/multihop_results_ckpt800_excerpt.json"), check_media=False
    )
    assert len(items) == 30 and {i.category for i in items} == {
        f"{h}Hop-{v}" for h in (1, 2, 3) for v in ("Ego", "Exo")
    }


def test_multihop_parquet_with_image_bytes(tmp_path: Path) -> None:
    rows = [{**r, "image": {"bytes": png_bytes(32, 24), "path": None}} for r in multihop_rows()]
    for row in rows:
        row.pop("image_path")
        row.pop("image_resolution")
    items = load("multihopspatial", write_parquet(tmp_path / "bench.parquet", rows))
    assert items[0].meta["image_size"] == (32, 24) and isinstance(items[0].media[0], bytes)


# --------------------------------------------------------------------------------------------------------
# SpatialTree-Bench


def test_spatialtree_lmms_layout(tmp_path: Path) -> None:
    items = {i.item_id: i for i in load("spatialtree", write_spatialtree(tmp_path))}
    mcq = items["mcq-1"]
    assert (mcq.task, mcq.options, mcq.meta["key"]) == ("mcq", {"A": "chair", "B": "table"}, "A")
    assert (mcq.tags["level"], mcq.tags["ability"], mcq.tags["sub_ability"], mcq.tags["scorer_type"]) == (
        "L1",
        "Relation",
        "RelativeDirection",
        "multichoiceeval",
    )
    assert items["mra-1"].task == "numeric" and items["mra-1"].meta["key"] == Quantity(2.0, None)
    assert items["grav-1"].meta["key"]["sigma"] == {"roll": 1.0, "pitch": 2.0, "vfov": 5.0}
    assert (
        items["judge-1"].meta["key"] == "yes"
        and items["cap-1"].task == "open_text"
        and items["aff-1"].task == "affordance"
    )


def test_spatialtree_flat_columns(tmp_path: Path) -> None:
    rows = [
        {
            "id": "x1",
            "question": "Which?",
            "option": ["A. left", "B. right"],
            "answer": "B",
            "level": "L1",
            "ability": "Relation",
            "sub_ability": "Relative Direction",
            "scorer": "multichoiceeval",
        }
    ]
    (tmp_path / "flat.json").write_text(json.dumps(rows))
    item = load("spatialtree", tmp_path / "flat.json")[0]
    assert item.tags["path"] == ["L1", "Relation", "Relative Direction"] and item.category == "L1/Relation"


def test_spatialtree_errors(tmp_path: Path) -> None:
    def write(rows: list[dict]) -> Path:
        path = tmp_path / f"t{len(list(tmp_path.iterdir()))}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return path

    row = spatialtree_rows()[0]
    with pytest.raises(DataError, match="item mcq-1: scorer 'bleu' is not one of"):
        load(
            "spatialtree",
            write(
                [{**row, "extra_info": json.dumps({"metricfunc": "bleu", "spatree0": "L1", "spatree1": "X"})}]
            ),
            check_media=False,
        )
    # A key lmms-eval still scores (never matched) is kept with the problem; the project leaves it unscored.
    no_options = load("spatialtree", write([{**row, "option": []}]), check_media=False)[0]
    assert "item mcq-1: a multichoiceeval item needs an 'option' list" in no_options.meta["key_problem"]
    assert get_benchmark("spatialtree").mode("project").score(no_options, "answer: A").score is None
    gravity = spatialtree_rows()[2]
    # An annotation lmms-eval still scores (0 for the item) is loaded with its problem recorded, not refused.
    odd = load(
        "spatialtree",
        write([{**gravity, "hint": json.dumps({"roll_unc": 1.0, "pitch_unc": 1.0})}]),
        check_media=False,
    )
    assert odd[0].meta["key"]["problems"] == ["hint has no numeric 'vfov_unc'"]
    with pytest.raises(DataError, match="item mcq-1: extra_info is not a JSON object"):
        load("spatialtree", write([{**row, "extra_info": "{oops"}]), check_media=False)
    with pytest.raises(DataError, match=r"media file 'images/a\.png' of the first item not found"):
        load("spatialtree", write([row]))

"""The documentation site: it builds with ``mkdocs build --strict``, and its generated pages follow the code."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("gen_pages", ROOT / "docs" / "_scripts" / "gen_pages.py")
gen_pages = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_pages)
SPACES = json.loads(gen_pages.SPACES_FILE.read_text())


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("material", reason="the docs need the dev extra (mkdocs-material)")
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    site = tmp_path / "site"
    done = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    calvin = (site / "envs" / "playtableenv" / "index.html").read_text()
    assert "SpatialArena/CalvinPlayTable-Abs-v0" in calvin and "Observation Space" in calvin
    assert "--num-sequences" in (site / "cli" / "calvin" / "index.html").read_text()
    assert "--backbone" in (site / "cli" / "policies" / "index.html").read_text()
    results = (site / "results" / "calvin_expert_100" / "index.html").read_text()
    assert "4.97" in results and "2026-11-21" in results
    multihop = json.loads((gen_pages.RESULTS_DIR / "multihop_repo_agreement.json").read_text())["metrics"]
    parity = (site / "guide" / "parity" / "index.html").read_text()
    assert f"{multihop['items_agreeing']} / {multihop['items']} items" in parity
    for page in (
        "howto/add-env",
        "howto/add-benchmark",
        "howto/add-policy",
        "howto/add-backend",
        *GUIDE_PAGES,
    ):
        assert (site / page / "index.html").is_file()


GUIDE_PAGES = tuple(f"guide/{p.stem}" for p in sorted((ROOT / "docs" / "guide").glob("*.md")))


def test_the_readme_is_short_and_its_links_resolve():
    """Issue 18: the README is what a newcomer needs first (under 15 KB); the rest lives in docs/."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) < 15_000
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    assert "docs/guide/calvin.md" in targets
    missing = [t for t in targets if not t.startswith(("http://", "https://")) and not (ROOT / t).exists()]
    assert not missing, f"README links to missing files: {missing}"


def test_ci_runs_exactly_the_readmes_test_command():
    commands = re.findall(r"^(make \w+) ", (ROOT / "README.md").read_text(), flags=re.M)
    assert commands[:2] == ["make demo", "make test"]
    ci = [
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line and not line.startswith(("#", "set ", "cd "))
    ]
    assert ci == ["make test"]


def test_every_guide_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    assert GUIDE_PAGES and all(f"{page}.md" in nav for page in GUIDE_PAGES)


def test_every_results_file_states_its_provenance():
    for path in sorted(gen_pages.RESULTS_DIR.glob("*.json")):
        data = gen_pages.load_result(path)
        assert all(data[key] for key in gen_pages.RESULT_KEYS)


def test_a_results_file_without_provenance_is_rejected(tmp_path):
    path = tmp_path / "numbers.json"
    path.write_text(json.dumps({"title": "t", "date": "2026-01-01", "metrics": {"x": 1}}))
    with pytest.raises(ValueError, match=r"numbers\.json: missing machine, source"):
        gen_pages.load_result(path)


def test_results_pages_show_the_files_numbers():
    pages = gen_pages.results_pages()
    data = json.loads((gen_pages.RESULTS_DIR / "eb_navigation_expert_random.json").read_text())
    page = pages["results/eb_navigation_expert_random.md"]
    for row in data["tables"][0]["rows"]:
        assert "| " + " | ".join(map(str, row)) + " |" in page


def test_the_spaces_file_covers_the_registry():
    gen_pages.load_spaces(gen_pages.env_classes())  # raises when an id was added or removed
    with pytest.raises(ValueError, match="--update-spaces"):
        gen_pages.load_spaces({"envs.x:Y": ["SpatialArena/Nope-v0"]})


@pytest.mark.parametrize(
    "env_id",
    [pytest.param(i, id=i, marks=[] if SPACES[i]["make_s"] < 1 else pytest.mark.slow) for i in SPACES],
)
def test_recorded_spaces_are_what_gym_make_builds(env_id):
    if env_id in gen_pages.env_classes().get("envs.calvin.official:OfficialPlayTableEnv", []):
        pytest.importorskip(
            "calvin_env", reason="the official CALVIN env needs a calvin_env checkout installed"
        )
    measured = gen_pages.measure_spaces(env_id)
    assert {k: measured[k] for k in ("action_space", "observation_space")} == {
        k: SPACES[env_id][k] for k in ("action_space", "observation_space")
    }


def test_docstring_sections_become_headings_and_argument_lists():
    doc = """Summary line.

    Description:
        A body that wraps
        over two lines.

    Arguments:
        size: image size.
        mode: "a" or "b",
            continued.
    """
    assert gen_pages.docstring_markdown(doc) == (
        "Summary line.\n\n### Description\n\nA body that wraps over two lines.\n\n### Arguments\n\n"
        '- size: image size.\n- mode: "a" or "b", continued.\n'
    )
    assert "### Action Space\n\nBox `evaluate` here." in gen_pages.docstring_markdown(
        "S.\n\n## Action Space\nBox :meth:`evaluate` here.\n"
    )


def test_cli_pages_are_the_parsers_options():
    from benchmarks.calvin import CalvinConfig  # the page is generated from this dataclass's parser

    page = gen_pages.command_page("calvin")
    for field in ("num_sequences", "ep_len", "workers", "resume"):
        assert f"`--{field.replace('_', '-')}`" in page
    assert "at most 360 steps" not in page and CalvinConfig.__doc__.strip() in page
    assert "[policy options](policies.md)" in page
    policies = gen_pages.policies_page()
    assert "`--backbone`" in policies and "`--model`" in policies


def test_generated_pages_have_unique_titles_in_the_nav():
    """Issue 29: two results pages had one title, so the site's nav listed the same entry twice."""
    pages = gen_pages.generate()
    config = gen_pages.on_config(
        {
            "nav": [
                {"Environments": "envs/index.md"},
                {"Command line": "cli/index.md"},
                {"Results": "results/index.md"},
            ]
        }
    )
    for section in config["nav"]:
        ((name, paths),) = section.items()
        titles = [re.search(r"^# (.+)$", pages[path], flags=re.M).group(1) for path in paths]
        assert len(paths) > 1 and len(set(titles)) == len(titles), f"{name}: {titles}"


def test_two_results_files_with_one_title_are_rejected(tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"{name}.json").write_text(
            json.dumps({"title": "Same", "date": "2026-01-01", "machine": "m", "source": "s"})
        )
    with pytest.raises(ValueError, match=r"b\.json: title 'Same' is also a\.json's"):
        gen_pages.results_pages(tmp_path)


def test_a_results_note_beside_its_file_is_on_its_page_and_an_orphan_note_is_rejected(tmp_path):
    """Issue 30: dated measurements live in bench/results/ (a NAME.md beside NAME.json), the guides link them."""
    (tmp_path / "speed.json").write_text(
        json.dumps({"title": "Speed", "date": "2026-01-01", "machine": "m", "source": "s"})
    )
    (tmp_path / "speed.md").write_text("| run | steps/s |\n|---|---|\n| a | 12.5 |\n")
    page = gen_pages.results_pages(tmp_path)["results/speed.md"]
    assert page.index("| file | `bench/results/speed.json` |") < page.index("| a | 12.5 |")
    (tmp_path / "lost.md").write_text("numbers")
    with pytest.raises(ValueError, match=r"lost\.md without a \.json beside it"):
        gen_pages.results_pages(tmp_path)


def test_every_results_page_is_linked_from_a_guide_and_every_guide_link_to_results_resolves():
    """Issue 30: the guides keep each measurement's method and link its numbers; no results page is left
    unlinked and no guide points at a results page that does not exist."""
    pages = {path.removeprefix("results/") for path in gen_pages.results_pages()} - {"index.md"}
    linked: dict[str, list[str]] = {}
    for guide in sorted((ROOT / "docs" / "guide").glob("*.md")):
        for target in re.findall(r"\]\(\.\./results/([^)#\s]+)", guide.read_text()):
            linked.setdefault(target, []).append(guide.name)
    assert not set(linked) - pages - {"index.md"}, {t: linked[t] for t in set(linked) - pages - {"index.md"}}
    assert not pages - set(linked), f"results pages no guide links: {sorted(pages - set(linked))}"


# ------------------------------------------------------------------------------------------- parity ledger


def test_every_official_route_in_the_code_has_a_ledger_row():
    """A new scoring mode, goal scorer, CALVIN backend or EB family without a ledger row fails the build."""
    routes = gen_pages.official_routes()
    assert {row.route for row in gen_pages.PARITY_LEDGER} == set(routes)
    assert (
        "static --bench vsibench --mode vsibench-lmms-eval" in routes
        and "calvin --backend official" in routes
    )
    with pytest.raises(ValueError, match=r"routes without a row \['static --bench vsibench --mode new'\]"):
        gen_pages.parity_page(routes=[*routes, "static --bench vsibench --mode new"])
    with pytest.raises(ValueError, match=r"rows without a route \['libero'\]"):
        gen_pages.parity_page(routes=[r for r in routes if r != "libero"])


def test_every_results_file_the_ledger_names_has_its_fields(tmp_path):
    measured = [row for row in gen_pages.PARITY_LEDGER if row.result]
    assert len(measured) >= 3
    for row in measured:
        assert (gen_pages.RESULTS_DIR / f"{row.result}.json").is_file(), row.result
        cells = gen_pages.parity_cells(row)  # raises on a missing field
        assert "/" in cells[2] and cells[4].startswith("[")
    row = next(r for r in measured if r.result == "calvin_official_absolute")
    data = json.loads((gen_pages.RESULTS_DIR / f"{row.result}.json").read_text())
    del data["metrics"]["chains_agreeing"]
    (tmp_path / f"{row.result}.json").write_text(json.dumps(data))
    with pytest.raises(
        ValueError, match=r"calvin_official_absolute\.json has no field 'metrics\.chains_agreeing'"
    ):
        gen_pages.parity_cells(row, tmp_path)


def test_the_ledger_shows_the_results_numbers_and_what_is_not_measured(tmp_path):
    page = gen_pages.parity_page()
    parity = json.loads(
        (gen_pages.RESULTS_DIR / "calvin_parity_2026-11-26_vm-2core-shared_100chains.json").read_text()
    )
    agreeing = parity["chains"] - len(parity["chains_differ_builtin_official"])
    row = next(line for line in page.splitlines() if line.startswith("| `calvin --backend builtin`"))
    assert f"{agreeing} / {parity['chains']} chains" in row and str(parity["static_mad_builtin"]) in row
    assert parity["calvin_env_commit"][:12] in row and f"{parity['avg_len_builtin']} here" in row
    for line in page.splitlines():
        if line.startswith(("| `libero`", "| `embodied nav`", "| `goal score --scorer lmms-eval`")):
            assert "not measured: " in line
    # the numbers are read, not typed: another file gives another row
    data = json.loads((gen_pages.RESULTS_DIR / "calvin_official_absolute.json").read_text())
    data["metrics"].update(chains_agreeing=17, avg_len_official=4.55)
    (tmp_path / "calvin_official_absolute.json").write_text(json.dumps(data))
    row = next(r for r in gen_pages.PARITY_LEDGER if r.result == "calvin_official_absolute")
    assert (
        "17 / 20 chains; expert avg. len 4.55 here vs 4.9 (-0.35)" in gen_pages.parity_cells(row, tmp_path)[2]
    )

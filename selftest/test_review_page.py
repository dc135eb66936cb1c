"""The release review page, looked at in a real headless Chromium (Debian's chromium and
chromium-driver, driven by Selenium): a real audit's page shows its verdict (PARTIAL: an audit is
not the whole release set) and arch matrix with no console error; a partial run's page reads
PARTIAL and fits 1400 px and 420 px windows; a failing wheel's page says FAIL and names the missing arch; the GPU reports fill
the arch matrix's verified column; the timeline says "not measured" when the build measured nothing.
"""
from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from build_steps.report import review_page

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
REPORTS = Path(__file__).resolve().parent / "gpu_reports"
# Debian's chromium + chromium-driver (scripts/setup.sh), else a Chrome and its driver on PATH (Ubuntu,
# where Chromium is a snap: GitHub's ubuntu runners have google-chrome and chromedriver).
CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "google-chrome", "google-chrome-stable"))),
                "/usr/bin/chromium")
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium from the system's packages (scripts/setup.sh installs them)."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail("no Chromium and chromedriver: on Debian run scripts/setup.sh (apt-get install chromium "
                    "chromium-driver); on Ubuntu put google-chrome and chromedriver on PATH", pytrace=False)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    opts = Options()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1200,900", "--hide-scrollbars"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # A Service with the system's driver path: Selenium Manager never tries to download one.
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    yield driver
    driver.quit()


def open_page(driver, path: Path) -> list:
    """Load ``path``; return the console's SEVERE entries (errors, blocked or failed loads)."""
    driver.get_log("browser")  # drop what an earlier page left
    driver.get(Path(path).resolve().as_uri())
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def screenshot(driver, dest: Path) -> Path:
    """The whole page as one PNG (the window grown to the document's height)."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1200, min(int(height) + 40, 8000))
    driver.save_screenshot(str(dest))
    driver.set_window_size(1200, 900)
    return dest


def _text(driver, css: str) -> str:
    from selenium.webdriver.common.by import By
    return driver.find_element(By.CSS_SELECTOR, css).text


def _rows(driver, css: str) -> list:
    from selenium.webdriver.common.by import By
    return [r.text for r in driver.find_elements(By.CSS_SELECTOR, css)]


@pytest.mark.slow
def test_review_page_of_a_real_audit_in_chromium(gates, selftest_wheels, browser, tmp_path, request):
    report = tmp_path / "report.json"
    result = gates("-m", "provenance", f"--wheel={selftest_wheels['good_cuda']}",
                   f"--mxnet-src={selftest_wheels['src']}", f"--provenance-json={report}")
    assert result.ret == 0, result.stdout.str()[-3000:]
    page = report.with_suffix(".html")
    assert f"review page: {page}" in result.stdout.str()
    html = page.read_text()
    # Self-contained: nothing the browser would fetch (the svg xmlns is a name, not a load).
    assert not re.search(r"<script|<link|<img|\bsrc=|url\(", html), "the page references an asset"

    errors = open_page(browser, page)
    assert errors == [], errors
    # -m provenance is part of the release set: every gate that ran passed, and still no PASS
    assert _text(browser, "#verdict .word").startswith("PARTIAL: "), _text(browser, "#verdict")
    assert "not a release verdict" in _text(browser, "#verdict")
    doc = json.loads(report.read_text())
    assert _text(browser, "#sha256") == doc["wheel"]["sha256"]
    archs = _rows(browser, "#archs tbody tr")
    assert [r.split()[0] for r in archs] == ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]
    assert all("present" in r for r in archs), archs
    assert "MISSING" not in " ".join(archs)
    assert len(_rows(browser, "#gates ul.passed li .gateid")) == len(doc["gates"])  # every gate passed
    assert all(_rows(browser, "#gates ul.passed li .meaning")), "a gate without its meaning"
    assert _rows(browser, "#gates details.group"), "the release set's other gates are not listed"
    assert _rows(browser, "#gates tbody tr") == []
    assert "not measured" in _text(browser, "#timeline")  # an audit builds nothing
    shot = screenshot(browser, tmp_path / "review_page.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    pdf = base64.b64decode(browser.print_page())  # readable printed: Chromium's own print path
    assert pdf[:5] == b"%PDF-" and len(pdf) > 10_000
    request.node.user_properties.append(("screenshot", str(shot)))


@pytest.mark.slow
def test_review_page_of_a_wheel_missing_an_arch_says_fail_and_names_it(gates, selftest_wheels, browser, tmp_path):
    page = tmp_path / "page.html"
    result = gates("-m", "provenance", f"--wheel={selftest_wheels['variants']['sm100_dropped']}",
                   f"--review-page={page}")
    assert result.ret == 1
    assert open_page(browser, page) == []
    assert _text(browser, "#verdict .word") == "FAIL"
    row = next(r for r in _rows(browser, "#archs tbody tr") if r.startswith("sm_100"))
    assert "MISSING" in row, row
    failed = [r for r in _rows(browser, "#gates tbody tr") if r.startswith("failed")]
    assert any("test_sass_for_every_requested_arch" in r and "sm_100" in r for r in failed), failed


def test_console_check_catches_a_page_that_loads_a_network_asset(browser, tmp_path):
    """The "no console errors" check can fail: an asset from the network is blocked by the page's
    Content-Security-Policy and logged (port 9 on loopback: nothing is sent anywhere else)."""
    doc = json.loads((REPORTS / "a100.json").read_text())
    good = tmp_path / "good.html"
    good.write_text(review_page.render(review_page.page_view(doc)))
    assert open_page(browser, good) == []
    bad = tmp_path / "bad.html"
    bad.write_text(good.read_text().replace("</head>", '<link rel="stylesheet" href="http://127.0.0.1:9/x.css"></head>'))
    errors = open_page(browser, bad)
    assert errors and "127.0.0.1:9" in " ".join(e["message"] for e in errors), errors


def test_arch_matrix_names_the_gpu_that_verified_each_arch(browser, tmp_path):
    """The GPU runners' reports merged (build_steps.gpu_reports): the verified column says which GPU
    ran which arch, which failed, and which no GPU verified."""
    d = tmp_path / "reports"
    d.mkdir()
    for name in ("a100.json", "l40s.json", "rtx5090.json"):
        shutil.copy(REPORTS / name, d / name)
    report = d / "a100.json"
    out = tmp_path / "page.html"
    r = subprocess.run([sys.executable, "-m", "tools.review_page", str(report),
                        f"--gpu-reports={d}", f"--out={out}"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert open_page(browser, out) == []
    rows = {r.split()[0]: r for r in _rows(browser, "#archs tbody tr")}
    assert "verified" in rows["sm_80"] and "A100" in rows["sm_80"]
    assert "verified" in rows["sm_89"] and "L40S" in rows["sm_89"]
    assert "failed" in rows["sm_120"]
    assert "not verified" in rows["sm_90"]


def test_timeline_shows_the_slowest_compile_steps_or_says_not_measured(tmp_path):
    from build_steps.compile import CompileResult
    from build_steps.configure import ConfigureResult
    from build_steps.package import PackageResult
    from build_steps.report.document import _timeline
    from build_steps.report.record import ChainProducts
    records = ChainProducts(
        configure=ConfigureResult(build_dir=tmp_path, first_time=True, seconds=4.8, log=tmp_path / "c.log", cache={}),
        compile=CompileResult(library=tmp_path / "libmxnet.so", seconds=3600.0, steps_run=1300, total_steps=1300,
                              no_work=False, log=tmp_path / "compile.log"),
        wheel=PackageResult(wheel=tmp_path / "mxnet.whl", seconds=16.7, log=tmp_path / "p.log"))
    doc = {"profile": "cuda", "review": {"timeline": _timeline(records)}}
    html = review_page.render(review_page.page_view(doc))
    timeline = html[html.index('id="timeline"'):html.index('id="overrides"')]
    assert "1 h 0 min" in timeline and "Slowest compile steps" in timeline
    assert timeline.count("not measured") == 1  # the steps are measured, the slowest are not

    # the compile step's record as build_steps.readers.ninja_log.build_time makes it
    from build_steps.readers.ninja_log import NinjaCommand, build_time
    commands = [NinjaCommand(target="src/operator/nn/convolution.cu.o", seconds=812.5),
                NinjaCommand(target="src/operator/tensor/broadcast_reduce_op.cu.o", seconds=640.0)]
    records.compile.build_time = build_time(commands, 7000.0)
    doc["review"]["timeline"] = _timeline(records)
    html = review_page.render(review_page.page_view(doc))
    timeline = html[html.index('id="timeline"'):html.index('id="overrides"')]
    assert "not measured" not in timeline
    assert "convolution.cu.o" in timeline and "13 min 32 s" in timeline and "1 h 56 min of CPU time" in timeline


def test_review_page_cli_refuses_a_report_that_is_not_json(tmp_path):
    bad = tmp_path / "r.json"
    bad.write_text("not json")
    r = subprocess.run([sys.executable, "-m", "tools.review_page", str(bad)], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 4 and "not a readable JSON report" in r.stderr
    assert not bad.with_suffix(".html").exists()


def test_publish_attaches_the_review_page_to_the_release(tmp_path):
    from build_steps import publish
    from build_steps.profile_data import PROFILES
    state = publish.RepoState(repo=tmp_path, head="a" * 40, branch="main", remote="origin",
                              remote_url="git@github.com:owner/mxnet.git", remote_tags=(), local_tags=())
    release = publish.ReleaseVersion("2.0.0+cu13.bw.20260614.1", "v2.0.0+cu13.bw.20260614.1", "test")
    facts = publish.ReleaseFacts(features=("CUDA",), sass=("sm_80",), ptx=(), commits=("a" * 40,))
    wheel = tmp_path / "mxnet-2.0.0+cu13.bw.20260614.1-cp311-cp311-linux_x86_64.whl"
    page = tmp_path / "review.html"
    plan = publish.plan_release(state, release, PROFILES["cuda"], facts, wheel, digest="0" * 64, assets=[page])
    gh = next(c for c in plan.commands if c.name == "release").argv
    assert gh[:6] == ("gh", "release", "create", release.tag, str(wheel.resolve()), str(page.resolve()))


PROBE = '''
import json
from pathlib import Path

import pytest

from dataclasses import replace

from build_steps.report import document as report_doc
from harness.plugins.finish import the_record
from build_steps.report.record import HostFacts
from harness.state import the_run


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    # what the end of the run's publish row does before the release: the page from this run's audit and pin
    config = session.config
    run = the_run(config)
    verdicts = {n: e.verdict for n, e in run.ledger.entries.items()}
    dest = Path(config.getoption("review_page")).with_name("release-page.html")
    # the run record the end of the run read (its row "read the run record" ran before this hook)
    report_doc.publish_page(replace(the_record(run), host=HostFacts.measure(), exitstatus=None), dest, verdicts)
'''


@pytest.mark.slow
def test_the_page_the_publish_gate_attaches_renders_from_a_real_run(gates, selftest_wheels, browser,
                                                                   pytester, tmp_path, monkeypatch):
    """build_steps.report.document.publish_page, as harness.plugins.finish's publish row calls it, on a real audit and pin (a
    real publish needs every gate green, GPU ones included, which this machine cannot run)."""
    (pytester.path / "publish_page_probe.py").write_text(PROBE)
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))
    result = gates("-m", "provenance", f"--wheel={selftest_wheels['good_cuda']}",
                   f"--mxnet-src={selftest_wheels['src']}", f"--review-page={tmp_path / 'page.html'}",
                   "-p", "publish_page_probe")
    assert result.ret == 0, result.stdout.str()[-3000:]
    page = tmp_path / "release-page.html"
    assert open_page(browser, page) == []
    assert _text(browser, "#verdict .word").startswith("PARTIAL: ")  # a provenance run is no whole set
    # every gate the run's table says passed is on the page (counted from the run, never hand-kept)
    passed = [ln.split()[1] for ln in result.stdout.lines if ln.startswith("PASSED   tests/")]
    assert passed and sorted(_rows(browser, "#gates ul.passed li .gateid")) == sorted(passed)
    assert all("present" in r for r in _rows(browser, "#archs tbody tr"))


def test_gpu_reports_that_is_not_a_directory_is_a_usage_error(gates, tmp_path):
    # no --wheel: a missing wheel is the options' usage error, checked first (the run's state is
    # made from valid options before any plugin's configure)
    result = gates("-m", "provenance", f"--gpu-reports={tmp_path / 'nowhere'}", timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpu-reports *nowhere: no such directory*"])


def test_timeline_of_the_real_fork_build_on_the_h200(tmp_path):
    """The JSON report of the real fork's build on an H200 (docs/gpu_runs/, written before the review
    section existed): its step times and the 10 slowest .ninja_log commands fill the timeline."""
    doc = json.loads((ROOT / "docs" / "gpu_runs" / "real_fork_2026-12-03-compile.json").read_text())
    html = review_page.render(review_page.page_view(doc))
    timeline = html[html.index('id="timeline"'):html.index('id="overrides"')]
    assert "not measured" not in timeline
    assert "17 min 42 s" in timeline  # compile: 1062.3 s wall
    assert "log_softmax.cu.o" in timeline and "6 min 33 s" in timeline  # the slowest command
    assert "779 commands" in timeline and "4 h 5 min of CPU time (13.9x the compile's wall time)" in timeline


# ---- the verdict cannot be misread (issue 36) ------------------------------------------------

def _release_set(flavor="cuda") -> list:
    return list(json.loads((ROOT / "build_steps" / "release_sets" / f"{flavor}.json").read_text())["gates"])


def test_only_a_whole_release_set_run_says_pass():
    gates = _release_set()
    allpass = [{"nodeid": n, "verdict": "passed"} for n in gates]
    assert review_page.verdict(allpass, gates, "cuda")["outcome"] == "PASS"
    part = allpass[:46]
    v = review_page.verdict(part, gates, "cuda", selection="-m 'release and not gpu'")
    assert v["outcome"] == "PARTIAL"
    assert v["headline"] == f"PARTIAL: 46 of {len(gates)} gates of the release set ran"
    assert "not a release verdict" in v["meaning"]
    failed = [*part[:-1], {"nodeid": part[-1]["nodeid"], "verdict": "failed"}]
    assert review_page.verdict(failed, gates, "cuda")["outcome"] == "FAIL"
    skipped = [*allpass[:-1], {"nodeid": allpass[-1]["nodeid"], "verdict": "skipped"}]
    assert review_page.verdict(skipped, gates, "cuda")["outcome"] == "FAIL"  # a release counts a skip
    assert review_page.verdict(allpass, None, "cuda")["outcome"] == "PARTIAL"  # no set: never PASS


def test_gate_meanings_are_read_from_the_harness_gate_modules():
    """The page's one-line meaning of each gate comes from its module in the harness's tests/. The
    default root is the checkout: when the module moved from harness/ into build_steps/report/, its
    parent.parent became build_steps/, every read failed quietly and every meaning was empty."""
    from build_steps.report.document import gate_meanings
    gate = next(g for g in _release_set() if g.startswith("tests/test_stripped_libraries.py::"))
    meaning = gate_meanings([gate]).get(gate, "")
    assert "DWARF" in meaning or "strip" in meaning.lower(), meaning


def partial_doc() -> dict:
    """The real fork's report (its facts: closure, fatbin) with a review section of a partial run:
    the static gates passed, the rest of the release set not run, as the main job leaves it."""
    from build_steps.report.document import gate_meanings
    doc = json.loads((ROOT / "docs" / "gpu_runs" / "real_fork_2026-12-04.json").read_text())
    gates = _release_set()
    ran = [n for n in gates if "acceptance" not in n and "gpu" not in n and "cublas" not in n][:40]
    meanings = gate_meanings(gates)
    rows = [{"nodeid": n, "verdict": "passed", "why": "", "markers": [], "meaning": meanings.get(n, "")} for n in ran]
    # markers as a run's collection gives them (here guessed from the ids: test data only)
    not_run = [{"nodeid": n, "group": review_page.group_of(n, [m for m in review_page.GROUP_MARKERS if m in n]),
                "meaning": meanings.get(n, "")} for n in gates if n not in ran]
    doc["review"] = {**doc["review"], "verdict": review_page.verdict(rows, gates, "cuda",
                                                                    selection="-m 'release and not gpu and not runtime'"),
                     "gates": rows, "not_run": not_run,
                     "provenance": {"source": "/work/selftest/sample_mxnet", "commit": "0" * 40, "sample": True,
                                    "host": "build-1", "nvcc": "NVIDIA 13.0.88", "c++": "GNU 12.2.0",
                                    "cuda_wheels": ["nvidia-cublas 13.1.0.3"]},
                     "configure_notes": ["cuDNN not found (optional: reported, not fatal)"],
                     "written": ["/work/selftest/sample_mxnet/build/harness-logs/review.html"]}
    return doc


def overflow(driver) -> int:
    """How far the document is wider than the window (0: no horizontal scrolling)."""
    return int(driver.execute_script(
        "const e = document.documentElement; return e.scrollWidth - e.clientWidth;"))


@pytest.mark.parametrize("width", [1400, 420])
def test_partial_page_reads_partial_and_fits_the_window(browser, tmp_path, width):
    from selenium.webdriver.common.by import By
    page = tmp_path / "partial.html"
    page.write_text(review_page.render(review_page.page_view(partial_doc())))
    browser.set_window_size(width, 900)
    try:
        assert open_page(browser, page) == []
        word = browser.find_element(By.CSS_SELECTOR, "#verdict .word")
        n = len(_release_set())
        assert word.text == f"PARTIAL: 40 of {n} gates of the release set ran"
        # neutral, not the PASS green
        colour = browser.execute_script("return getComputedStyle(arguments[0]).color", word)
        assert colour != "rgb(26, 127, 55)", colour
        groups = [e.get_attribute("id") for e in browser.find_elements(By.CSS_SELECTOR, "#gates details.group")]
        assert "not-run-gpu" in groups and "not-run-acceptance" in groups, groups
        assert "sample tree" in _text(browser, "header")
        assert "NVIDIA 13.0.88" in _text(browser, "#provenance")
        assert "left to the host" in _text(browser, "#closure-facts")
        assert overflow(browser) <= 0, f"{overflow(browser)} px of horizontal overflow at {width} px"
        if width == 420:
            shot = tmp_path / "narrow.png"
            browser.save_screenshot(str(shot))
            assert shot.stat().st_size > 10_000
    finally:
        browser.set_window_size(1200, 900)


def test_overflow_check_catches_a_page_wider_than_the_window(browser, tmp_path):
    page = tmp_path / "wide.html"
    html = review_page.render(review_page.page_view(partial_doc()))
    page.write_text(html.replace("<footer", '<div style="white-space:nowrap">' + "x" * 300 + "</div><footer"))
    browser.set_window_size(420, 900)
    try:
        assert open_page(browser, page) == []
        assert overflow(browser) > 0
    finally:
        browser.set_window_size(1200, 900)


def test_a_partial_run_that_failed_says_fail_not_partial():
    gates = _release_set()
    rows = [{"nodeid": n, "verdict": "passed"} for n in gates[:45]] + [{"nodeid": gates[45], "verdict": "failed"}]
    v = review_page.verdict(rows, gates, "cuda")
    assert v["outcome"] == "FAIL" and "headline" not in v and v["scope"] == f"46 of the cuda release set's {len(gates)} gates ran"
    html = review_page.render(review_page.page_view({"profile": "cuda", "review": {"verdict": v, "gates": rows}}))
    assert '<div class="word">FAIL</div>' in html

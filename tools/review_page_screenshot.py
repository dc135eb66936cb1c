"""Screenshot a review page in headless Chromium, as docs/review_page_sample.png is made:

    python -m tools.review_page_screenshot PAGE.html [--out=PNG] [--width=1400] [--narrow-out=PNG]

The whole page is one PNG (the window grown to the document's height). ``--narrow-out`` also
writes a 420 px wide one, the width the page must stay readable at. Needs Chromium and
chromedriver (Debian's chromium + chromium-driver, or google-chrome + chromedriver on PATH) and
selenium (the harness's selftest extras). The docs' sample is the README main job's page:

    .venv/bin/python -m pytest -m "release and not gpu and not runtime" --mxnet-src=selftest/sample_mxnet --cuda-from-wheels
    .venv/bin/python -m tools.review_page_screenshot selftest/sample_mxnet-build/harness-logs/review.html

Exit 4 on a usage error (no page, no browser), 1 when the browser fails.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from build_steps.errors import FAIL, REFUSED

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "review_page_sample.png"
NARROW = 420
#: Chromium's limit on one screenshot's height here; a longer page is cut (and says so).
MAX_HEIGHT = 12000


def browser_paths() -> tuple[str | None, str | None]:
    chromium = next(filter(None, map(shutil.which, ("chromium", "google-chrome", "google-chrome-stable"))), None)
    return chromium, shutil.which("chromedriver")


def open_browser(width: int):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    chromium, driver = browser_paths()
    opts = Options()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},900", "--hide-scrollbars", "--force-device-scale-factor=1"):
        opts.add_argument(arg)
    # the system's driver: Selenium Manager never downloads one
    return webdriver.Chrome(service=Service(driver), options=opts)


def shoot(driver, page: Path, dest: Path, width: int) -> tuple[int, int]:
    """Write the whole page at ``width`` px to ``dest``; return (height, horizontal overflow)."""
    driver.set_window_size(width, 900)
    driver.get(page.resolve().as_uri())
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    over = int(driver.execute_script("const e = document.documentElement; return e.scrollWidth - e.clientWidth"))
    driver.set_window_size(width, min(height + 40, MAX_HEIGHT))
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp.png")
    driver.save_screenshot(str(tmp))
    tmp.replace(dest)
    return height, over


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.review_page_screenshot", description=__doc__.split("\n\n")[0])
    ap.add_argument("page", type=Path, help="the review page (HTML) to screenshot")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"the PNG (default {DEFAULT_OUT.relative_to(ROOT)})")
    ap.add_argument("--width", type=int, default=1400, help="window width in px (default 1400)")
    ap.add_argument("--narrow-out", type=Path, help=f"also a {NARROW} px wide screenshot here")
    args = ap.parse_args(argv)
    if not args.page.is_file():
        print(f"error: {args.page}: no such page; run the main job first (see python -m tools.review_page_screenshot -h)",
              file=sys.stderr)
        return REFUSED
    if None in browser_paths():
        print("error: no Chromium and chromedriver: apt-get install chromium chromium-driver (Debian), or put "
              "google-chrome and chromedriver on PATH", file=sys.stderr)
        return REFUSED
    try:
        driver = open_browser(args.width)
    except Exception as exc:  # selenium's errors have no common base worth naming here
        print(f"error: the browser did not start: {exc}", file=sys.stderr)
        return FAIL
    try:
        shots = [(args.out, args.width)] + ([(args.narrow_out, NARROW)] if args.narrow_out else [])
        for dest, width in shots:
            height, over = shoot(driver, args.page, dest, width)
            cut = f", cut at {MAX_HEIGHT} px" if height + 40 > MAX_HEIGHT else ""
            wide = f"; {over} px wider than the window" if over > 0 else ""
            print(f"{dest}: {width} x {height} px{cut}{wide}")
    finally:
        driver.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What a person sees, in real headless Chromium (Debian's package) against a live `streamlit run app.py`:
a shared link opens the scenario, the headline paints before any chart, sliders and their number boxes move the
headline and the address bar together, the pickers search and keep spec ids in the link, no Deploy menu."""

import json
import re
import shutil

import pytest

pytest.importorskip("playwright")
from playwright.sync_api import expect, sync_playwright  # noqa: E402

from scripts.benchmark import FRAME_PROBE  # noqa: E402
from scripts.serve import launch_browser, start_server  # noqa: E402

pytestmark = pytest.mark.browser
LINK = "/?model=qwen2.5-7b-instruct&gpu=rtx-4090&max_model_len=8192&concurrency=16"
CHART_PROBE = """
window.__chart = null;
(function tick() {
  if (window.__chart === null && document.querySelector('.js-plotly-plot')) window.__chart = performance.now();
  if (window.__chart === null) requestAnimationFrame(tick);
})();
"""


@pytest.fixture(scope="module")
def server():
    if shutil.which("chromium") is None:
        pytest.fail("Debian's chromium is required for the browser tests: apt-get install -y chromium")
    proc, base = start_server()
    try:
        with sync_playwright() as p:
            browser = launch_browser(p)
            yield browser, base
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture(scope="module")
def page(server):
    browser, base = server
    pg = browser.new_page(viewport={"width": 1500, "height": 2200})
    pg.base = base
    yield pg
    pg.close()


def verdict(page) -> str:
    box = page.locator('[data-testid="stAlertContentSuccess"], [data-testid="stAlertContentError"]').first
    box.wait_for(timeout=30_000)
    return box.inner_text().split("\n")[-1]  # drop the icon's ligature name


def wait_for_change(page, old: str) -> str:
    for _ in range(100):
        page.wait_for_timeout(200)
        now = verdict(page)
        if now != old:
            return now
    raise AssertionError("the headline did not change")


def test_shared_link_slider_and_address_bar(page, tmp_path):
    page.goto(page.base + LINK)
    first = verdict(page)
    assert first.startswith("16 × 1,280 tokens: fits")
    page.screenshot(path=str(tmp_path / "browser-link.png"))

    # the gpu_memory_utilization slider: focus its thumb and press the left arrow five times
    page.get_by_text("Engine (server flags)").click()
    thumb = page.get_by_role("slider", name="gpu_memory_utilization")
    thumb.focus()
    for _ in range(5):
        page.keyboard.press("ArrowLeft")
    after_slider = wait_for_change(page, first)
    # each arrow press is a 0.01 step down from 0.9; however many the rerun coalesced, the URL carries the new value
    expect(page).to_have_url(re.compile(r"gpu_memory_utilization=0\.8[5-9]"), timeout=15_000)

    # concurrency: type a new value
    box = page.get_by_role("spinbutton", name="Concurrent requests")
    box.fill("96")
    box.press("Enter")
    after_input = wait_for_change(page, after_slider)
    assert after_input.startswith("96 × 1,280 tokens")
    expect(page).to_have_url(re.compile(r"concurrency=96"), timeout=15_000)
    assert re.search(r"gpu_memory_utilization=0\.8[5-9]", page.url)  # a field of another group stays in the link
    page.get_by_text("Engine (server flags)").click()  # closed: its inputs are no longer drawn, the link keeps them
    expect(page.get_by_role("slider", name="gpu_memory_utilization")).to_have_count(0, timeout=15_000)
    assert re.search(r"gpu_memory_utilization=0\.8[5-9]", page.url)
    page.screenshot(path=str(tmp_path / "browser-after.png"))

    # a colleague opening the new address sees the same scenario
    shared = page.url
    page.goto(shared)
    assert verdict(page) == after_input


def test_every_tab_fills_without_errors(page, tmp_path):
    page.goto(page.base + LINK + "&request_rate=20&gpu_hour_price=2")
    verdict(page)
    for i, name in enumerate(["Memory", "Latency", "Beyond the GPU", "SLOs & replicas", "Compare & export"]):
        page.get_by_role("tab", name=name).click()
        page.wait_for_timeout(1500)
        page.locator('[data-testid="stException"]').wait_for(state="detached", timeout=5_000)
        if name not in ("Compare & export",):
            expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=20_000)
        page.screenshot(path=str(tmp_path / f"browser-tab{i}.png"))


def test_a_link_opens_its_tab_and_the_open_tab_travels_in_the_link(page):
    """A review pastes the search's results, not the Memory tab: `tab=` in the link opens that tab, and choosing
    another writes it to the address bar (the default tab leaves the link clean)."""
    page.goto(page.base + LINK + "&tab=Latency")
    verdict(page)
    expect(page.locator('[role="tab"][aria-selected="true"]')).to_have_text("Latency", timeout=20_000)
    page.get_by_role("tab", name="Beyond the GPU").click()
    page.wait_for_function("() => window.location.search.includes('tab=Beyond')", timeout=20_000)
    page.get_by_role("tab", name="Memory").click()
    page.wait_for_function("() => !window.location.search.includes('tab=')", timeout=20_000)
    assert page.get_by_text("Part of the link was not taken as given").count() == 0


def test_html_and_markdown_in_a_link_render_as_text(page):
    evil = "<img src=x onerror=alert(1)>![img](http://example.invalid/x.png)[link](javascript:alert(1))"
    from urllib.parse import quote

    page.goto(page.base + "/?model=" + quote(evil) + "&gpu=" + quote("<script>alert(1)</script>") +
              "&concurrency=" + quote("**bold**") + "&document_len=inf&max_model_len=1e999")  # fmt: skip
    verdict(page)
    warnings = page.locator('[data-testid="stAlertContentWarning"]')
    expect(warnings.first).to_be_visible(timeout=15_000)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert warnings.first.locator("a").count() == 0, "no link forms from user text (not even an autolink)"
    assert page.locator("img[src='x'], img[src*='example.invalid'], a[href^='javascript']").count() == 0
    assert page.locator("script:has-text('alert(1)')").count() == 0
    assert "![img]" in warnings.first.inner_text() or "img" in warnings.first.inner_text()


def foreign_urls(page) -> list[str]:
    """Every a[href] and img[src] in the DOM that leaves the app: another http(s) origin, javascript:, data:."""
    from urllib.parse import urlsplit

    urls = page.eval_on_selector_all("a[href], img[src]", "els => els.map(e => e.href || e.src)")
    own = urlsplit(page.base)
    bad = []
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme in ("http", "https") and (parts.hostname, parts.port) != (own.hostname, own.port):
            bad.append(url)
        elif parts.scheme not in ("http", "https", "blob", "about"):
            bad.append(url)
    return bad


def test_markdown_and_html_in_every_text_parameter_link_nowhere(page):
    """Payloads in custom_model, pin, model, gpu and unknown keys; the Compare tab opened for the pin."""
    import base64
    import json
    import zlib
    from urllib.parse import urlencode

    evil = ("[x](https://evil.example/a) ![i](https://evil.example/i.png) <a href='https://evil.example/h'>h</a> "
            "<img src='https://evil.example/p.png'> https://evil.example/auto www.evil.example me@evil.example")  # fmt: skip

    def packed(data: dict) -> str:
        return base64.urlsafe_b64encode(zlib.compress(json.dumps(data).encode())).decode().rstrip("=")

    def pin(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    qwen = {"model_type": "qwen2", "num_hidden_layers": 28, "hidden_size": 3584, "intermediate_size": 18944,
            "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
            "max_position_embeddings": 32768}  # fmt: skip
    links = [
        {"model": evil, "gpu": evil, evil: evil, "concurrency": evil},
        {"model": "custom", "custom_model": evil},
        {"model": "custom", "custom_model": packed({**qwen, "name": evil[:120]})},
        {"model": "custom", "custom_model": packed({**qwen, "model_type": evil[:60]})},
        {"model": "custom", "custom_model": packed({**qwen, evil: 1})},
        {"pin": evil},
        {"pin": pin({evil: 1})},
        {"pin": pin({"custom_model": evil})},
        {"pin": pin({"model": "custom", "custom_model": packed({**qwen, "model_type": evil[:60]})})},
    ]
    for params in links:
        page.goto(page.base + "/?" + urlencode(params))
        verdict(page)
        page.get_by_role("tab", name="Compare & export").click()
        page.wait_for_timeout(1500)
        assert page.locator('[data-testid="stException"]').count() == 0, params
        assert foreign_urls(page) == [], params


def test_the_headline_paints_before_any_chart(server):
    """Issue 14: from a link the headline waited for the Memory tab's charts (7.5–9 s against a toy page's 2.2–3.4 s;
    scripts/benchmark.py measures the ratio). Here: the first headline number is on screen before the first chart."""
    browser, base = server
    visits = []
    for _ in range(3):
        ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
        ctx.add_init_script(FRAME_PROBE)
        ctx.add_init_script(CHART_PROBE)
        pg = ctx.new_page()
        pg.goto(base + LINK, wait_until="commit")
        pg.wait_for_function("window.__chart !== null", timeout=60_000, polling=50)
        visits.append(tuple(pg.evaluate("[window.__probe.first, window.__chart]")))
        ctx.close()
    # Never after a chart; before it on some visit. The headline and a chart in one frame is what the bug did on every
    # visit, and what a busy 2-core CI host does now and then (a 5 s load, the 0.25 s pause absorbed): CI, 2026-12-02.
    assert all(number is not None and number <= chart for number, chart in visits), visits
    assert any(number < chart for number, chart in visits), visits


def test_a_slider_and_its_number_box_move_one_url_field(page):
    """Issue 14: prompt length, output length, concurrency and request rate were number boxes stepping by 1."""
    page.goto(page.base + LINK)
    first = verdict(page)
    slider = page.get_by_role("slider", name="Concurrent requests")
    box = page.get_by_role("spinbutton", name="Concurrent requests")
    expect(box).to_have_value("16", timeout=30_000)  # the sidebar follows the headline: seconds on a slow host
    slider.focus()
    page.keyboard.press("ArrowRight")  # one log step: 16 → 24
    after = wait_for_change(page, first)
    assert after.startswith("24 × 1,280 tokens")
    expect(page).to_have_url(re.compile(r"concurrency=24(&|$)"), timeout=15_000)
    expect(box).to_have_value("24", timeout=15_000)
    box.fill("100")  # an exact value off the slider's grid
    box.press("Enter")
    assert wait_for_change(page, after).startswith("100 × 1,280 tokens")
    expect(page).to_have_url(re.compile(r"concurrency=100(&|$)"), timeout=15_000)
    expect(slider).to_have_attribute("aria-valuetext", re.compile("100"), timeout=15_000)


def test_the_gpu_picker_searches_and_keeps_the_spec_id_in_the_link(page):
    page.goto(page.base + LINK)
    first = verdict(page)
    picker = page.get_by_role("combobox", name=re.compile("GPU"))
    picker.click()
    page.keyboard.type("H100 SXM")
    option = page.get_by_role("option", name=re.compile(r"NVIDIA › NVIDIA H100 SXM 80GB · 79\.2 GiB .* USD.h"))
    expect(option).to_be_visible(timeout=10_000)
    option.click()
    wait_for_change(page, first)
    expect(page).to_have_url(re.compile(r"gpu=h100-sxm(&|$)"), timeout=15_000)
    assert "NVIDIA" not in page.url.split("?")[1]  # the id, not the label


def test_no_deploy_button_and_no_developer_menu(page):
    """Issue 14: Streamlit's "Deploy" button was on a design-review tool."""
    page.goto(page.base + LINK)
    verdict(page)
    assert page.get_by_role("button", name=re.compile("Deploy")).count() == 0
    assert page.get_by_text("Deploy", exact=True).count() == 0
    assert page.locator('[data-testid="stMainMenu"]').count() == 0


def test_the_headline_number_a_link_names_is_the_one_on_screen(page):
    """A shared link to the not-fitting case shows what is missing, with no latency figures."""
    page.goto(page.base + "/?model=llama-3.1-70b&gpu=rtx-4090")
    box = page.locator('[data-testid="stAlertContentError"]').first
    box.wait_for(timeout=30_000)
    assert "cannot run" in box.inner_text()
    expect(page.get_by_text("What is missing (per GPU)")).to_be_visible(timeout=30_000)
    assert page.get_by_text("TTFT (estimate)").count() == 0
    assert json.dumps(page.url).count("llama-3.1-70b") == 1


def test_a_link_streamlit_drops_says_so(server):
    """Streamlit ignores a query string of more than 1,000 parameters: the page opens with defaults, and says why."""
    browser, base = server
    pg = browser.new_page()
    try:
        pg.goto(base + "/?" + "&".join(f"p{i}=1" for i in range(1_001)))
        alert = pg.locator('div[role="alert"]', has_text="Streamlit reads at most 1,000 parameters")
        expect(alert).to_be_visible(timeout=30_000)
        assert "1,001 parameters" in alert.inner_text()
        pg.goto(base + "/?concurrency=8")  # an ordinary link: no such message
        verdict(pg)
        pg.wait_for_timeout(1_000)
        assert pg.locator('div[role="alert"]', has_text="Streamlit reads at most").count() == 0
    finally:
        pg.close()


def test_the_pages_own_path_cannot_become_a_link(page):
    """Streamlit serves the page under any path, and the page writes its own address into Markdown links (the
    suggestions' 'open' column): a path that closes the link and opens another rendered a live link and an image
    pointing elsewhere. Now the address is percent-encoded first."""
    for path in ("/p)[Click here to verify](https:evil.example", "/a)![EVIL](https:evil.example"):
        page.goto(page.base + path + "?concurrency=1000&input_len=8000")
        verdict(page)
        assert page.locator('[data-testid="stException"]').count() == 0, path
        assert page.get_by_text("Click here to verify").count() == 0 and foreign_urls(page) == [], path
        page.wait_for_selector("a[href*='max_model_len=']", timeout=20_000)  # the suggestion's 'open' link
        opens = page.eval_on_selector_all("a[href*='max_model_len=']", "els => els.map(e => e.href)")
        assert opens and all("%5B" in u and "[" not in u for u in opens), opens  # the path, encoded


def test_the_engine_release_typed_in_the_sidebar_retitles_the_plan_and_travels_in_the_link(page):
    """An infrastructure engineer on vLLM 0.11 types it in: the plan is titled with the release whose costs it uses,
    the TPOT moves, and the link carries the version, so the review sees the same plan."""
    page.goto(page.base + LINK)
    verdict(page)
    title = page.get_by_role("heading", name=re.compile("on NVIDIA GeForce RTX 4090"))
    expect(title).to_contain_text("vLLM 0.14 and later", timeout=30_000)
    tpot = page.locator('[data-testid="stMetric"]', has_text="TPOT (estimate)").locator('[data-testid="stMetricValue"]')
    before = tpot.inner_text()
    page.get_by_text("Engine (server flags)").click()
    box = page.get_by_role("textbox", name=re.compile("Engine version"))
    box.fill("0.11.0")
    box.press("Enter")
    expect(title).to_contain_text("vLLM 0.8–0.13", timeout=30_000)
    expect(page).to_have_url(re.compile(r"engine_version=0\.11\.0(&|$)"), timeout=15_000)
    assert tpot.inner_text() != before
    shared = page.url
    fresh = page.context.browser.new_page()  # a fresh browser context: nothing of this session
    fresh.goto(shared)
    expect(fresh.get_by_role("heading", name=re.compile("on NVIDIA GeForce RTX 4090"))).to_contain_text(
        "vLLM 0.8–0.13", timeout=30_000)
    fresh.close()


@pytest.mark.parametrize("width", [1024, 1280, 1500])
def test_every_headline_number_is_shown_whole_on_a_laptop_screen(server, width):
    """Six tiles a row on a 1,280-px laptop screen cut '57.02 GiB' to '57.02 …' and the cost to '0.0889 …': the tiles
    size their numbers to their column (app.py's style), three a row below 1,100 px, so none overflows its box."""
    browser, base = server
    pg = browser.new_page(viewport={"width": width, "height": 1200})
    try:
        pg.goto(base + "/?model=gpt-oss-20b&gpu=h100-sxm&concurrency=256&request_rate=50&input_len=128&output_len=200")
        verdict(pg)
        values = pg.locator('[data-testid="stMetricValue"]')
        expect(values).to_have_count(12, timeout=30_000)
        pg.evaluate("document.fonts.ready.then(() => true)")  # measured in the page's own font, not a fallback
        pg.wait_for_timeout(1000)
        cut = pg.evaluate("""() => [...document.querySelectorAll('[data-testid="stMetricValue"] div, [data-testid="stMetricValue"]')]
            .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)""")
        assert cut == [], cut
        assert "GiB" in values.first.inner_text()  # the unit is there, whole
        # seven tabs need ~690 px: at 1,024 px the last hid behind a scroll arrow (a page audit, 2026-12-06)
        hidden = pg.evaluate("""() => [...document.querySelectorAll('[role="tablist"]')]
            .filter(e => e.scrollWidth > e.clientWidth + 1).length""")
        assert hidden == 0
    finally:
        pg.close()

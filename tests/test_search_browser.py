"""The Find a deployment tab in real headless Chromium: a click on a frontier point opens that configuration as the
page's scenario (the address bar follows), and the tab updates after an input change."""

import pytest

pytest.importorskip("playwright")
from test_browser import server  # noqa: E402,F401  (the module's live server and browser)

pytestmark = pytest.mark.browser
LINK = "/?model=llama-3.1-70b&request_rate=10&input_len=2000&output_len=500"


@pytest.fixture(scope="module")
def page(server):  # noqa: F811
    browser, base = server
    pg = browser.new_page(viewport={"width": 1600, "height": 1400})
    pg.goto(base + LINK)
    pg.get_by_role("tab", name="Find a deployment").click()
    pg.get_by_text("Pareto frontier", exact=False).first.wait_for(timeout=60_000)
    pg.wait_for_timeout(3000)  # the chart settles (plotly lays it out after the tab's last element arrives)
    yield pg
    pg.close()


def test_a_click_on_a_frontier_point_opens_it(page):
    plot = page.locator(".js-plotly-plot").last
    plot.scroll_into_view_if_needed()
    page.wait_for_timeout(1000)
    point = plot.locator(".scatterlayer .trace").nth(1).locator(".points path").first
    box = point.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.wait_for_timeout(500)  # plotly picks the point on hover; the click then selects it
    page.mouse.click(x, y)
    # the link holds what differs from the defaults: every frontier point of a 70B search is on another GPU than the
    # default RTX 4090 and in quantized weights (its TP, max_num_seqs and concurrency only where not the defaults)
    page.wait_for_function("() => ['gpu=', 'dtype='].every(k => location.search.includes(k))", timeout=30_000)
    page.wait_for_timeout(500)
    assert "model=llama-3.1-70b" in page.url and "request_rate=10" in page.url

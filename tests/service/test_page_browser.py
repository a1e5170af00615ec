"""The page in a real browser: headless Chromium from the system's
packages (scripts/setup.sh installs them where it can), driven by
Selenium, pastes an abstract and finds each entity highlighted with its
ID, linked as kb_url links it, and its candidates on click. Set
SPACY_BIOSYN_SCREENSHOTS to a folder to keep a screenshot."""
import os
import shutil
from pathlib import Path

import pytest
from helpers import SERVED_ABSTRACT

from spacy_biosyn.pipeline.concept_pages import kb_url

pytest.importorskip("fastapi", reason="the serve extra is not installed")
webdriver = pytest.importorskip("selenium.webdriver", reason="Selenium is not installed (the browser extra)")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and DRIVER),
    reason="no Chromium and chromedriver on PATH: install Debian's chromium and chromium-driver (scripts/setup.sh does, as root)",
)


@pytest.fixture
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def test_a_pasted_abstract_shows_its_entities_with_their_ids_and_candidates(browser, live_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.get(live_server + "/")
    wait.until(ready.text_to_be_present_in_element((By.ID, "pipeline"), "biosyn_linker"))
    # a character outside the BMP first: the server counts code points, JavaScript UTF-16 units
    text = "\U0001d6fd-thalassemia aside. " + SERVED_ABSTRACT
    browser.execute_script("document.getElementById('text').value = arguments[0]", text)
    browser.find_element(By.ID, "link").click()
    wait.until(ready.text_to_be_present_in_element((By.ID, "status"), "4 entities"))

    marks = browser.find_elements(By.CSS_SELECTOR, "#entities mark.entity")
    assert [(mark.get_attribute("data-id"), "nil" in mark.get_attribute("class")) for mark in marks] == [
        ("MESH:D001943", False), ("MESH:D010051", False), ("MESH:D006816", False), ("NIL", True)]
    assert [mark.get_attribute("textContent").split("Disease")[0] for mark in marks] == [
        "breast cancer", "ovarian cancer", "Huntington disease", "unknown syndrome"]
    # the text around the entities is the pasted text
    assert browser.find_element(By.ID, "entities").get_attribute("textContent").startswith("\U0001d6fd-thalassemia aside. Germline")
    assert "MESH:D001943" in marks[0].get_attribute("title")  # the summary on hover

    marks[1].click()
    wait.until(ready.visibility_of_element_located((By.ID, "details")))
    concept = browser.find_element(By.CSS_SELECTOR, "#details-concept a")
    assert concept.text == "MESH:D010051" and concept.get_attribute("href") == kb_url("MESH:D010051")
    rows = browser.find_elements(By.CSS_SELECTOR, "#candidates tbody tr")
    assert rows and [cell.text for cell in rows[0].find_elements(By.TAG_NAME, "td")][:3] == ["1", "MESH:D010051", "ovarian cancer"]

    marks[3].click()
    assert browser.find_element(By.ID, "details-concept").text.startswith("NIL")
    folder = os.environ.get("SPACY_BIOSYN_SCREENSHOTS")
    if folder:
        browser.save_screenshot(str(Path(folder) / "page.png"))


def test_an_error_is_shown_on_the_page_not_thrown(browser, live_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(live_server + "/")
    browser.execute_script("document.getElementById('text').value = 'x'.repeat(100001)")
    browser.find_element(By.ID, "link").click()
    WebDriverWait(browser, 60).until(ready.text_to_be_present_in_element((By.ID, "status"), "max_text_chars"))
    assert "error" in browser.find_element(By.ID, "status").get_attribute("class")


def test_a_long_abstract_keeps_the_details_beside_the_entity_and_an_error_clears_the_answer(browser, live_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 60)
    browser.get(live_server + "/")
    wait.until(ready.text_to_be_present_in_element((By.ID, "pipeline"), "NIL under 0.9"))
    assert browser.find_element(By.CSS_SELECTOR, "link[rel=icon]").get_attribute("href") == "data:,"  # no 404
    text = " ".join([SERVED_ABSTRACT] * 40)
    assert len(text) > 5_000
    browser.execute_script("document.getElementById('text').value = arguments[0]", text)
    browser.find_element(By.ID, "link").click()
    wait.until(ready.text_to_be_present_in_element((By.ID, "status"), "160 entities"))
    marks = browser.find_elements(By.CSS_SELECTOR, "#entities mark.entity:not(.nil)")
    assert marks[0].find_element(By.CLASS_NAME, "score").text == "1.00"  # how sure, on the entity itself
    last = marks[-1]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", last)
    last.click()
    wait.until(ready.visibility_of_element_located((By.ID, "details")))
    top, bottom, height, mark_top = browser.execute_script(
        "const d = document.getElementById('details').getBoundingClientRect();"
        "return [d.top, d.bottom, innerHeight, arguments[0].getBoundingClientRect().top]", last)
    assert 0 <= top < height and bottom <= height + 1, (top, bottom, height)  # in view beside it, not 2,500 px below
    assert abs(top - mark_top) < height
    folder = os.environ.get("SPACY_BIOSYN_SCREENSHOTS")
    if folder:
        browser.save_screenshot(str(Path(folder) / "page-long.png"))
    browser.execute_script("document.getElementById('text').value = 'x'.repeat(100001)")
    browser.find_element(By.ID, "link").click()
    wait.until(ready.text_to_be_present_in_element((By.ID, "status"), "max_text_chars"))
    assert browser.find_elements(By.CSS_SELECTOR, "#entities mark") == []
    assert not browser.find_element(By.ID, "details").is_displayed()

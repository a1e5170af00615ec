// The page: POST the text to /link and show each entity in displaCy's entity
// style, its concept ID linked to its namespace's page, and on click its
// ranked candidates. Text is only ever set as text, never as HTML.
"use strict";

const COLORS = { DISEASE: "#fe4a49", CHEMICAL: "#7aecec", GENE: "#aa9cfc", SPECIES: "#bfe1d9" };
let pages = { templates: {}, bare_ids: {} };

// As kb_url (pipeline/concept_pages.py): "" for a composite or an unknown namespace.
function conceptUrl(cui) {
  if (!cui || cui.includes("|")) return "";
  let colon = cui.lastIndexOf(":");
  let [prefix, local] = colon >= 0 ? [cui.slice(0, colon), cui.slice(colon + 1)] : ["", cui];
  if (!prefix) {
    prefix = Object.keys(pages.bare_ids).find((p) => new RegExp(`^(?:${pages.bare_ids[p]})$`).test(cui)) || "";
  }
  const template = pages.templates[prefix.toUpperCase()];
  return template ? template.replace("{}", encodeURIComponent(local)) : "";
}

function element(tag, attributes = {}, text = null) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  if (text !== null) node.textContent = text;
  return node;
}

function conceptLink(cui) {
  const url = conceptUrl(cui);
  if (!url) return element("span", { class: "concept-id" }, cui);
  return element("a", { class: "concept-id", href: url, target: "_blank", rel: "noopener" }, cui);
}

// A concept as the page shows it: its canonical name, and the name the mention matched where that is another.
function named(candidate) {
  if (!candidate) return "";
  const name = candidate.concept_name;
  if (!name) return candidate.name;
  return name.toLowerCase() === candidate.name ? name : `${name} (matched "${candidate.name}")`;
}

function nilSaid(entity) {
  const why = `NIL: ${entity.nil_reason ? entity.nil_reason.replaceAll("_", " ") : "not linked"}`;
  const best = entity.nil_best;
  if (!best) return why;
  return `${why}; best ${best.id}${best.concept_name ? " " + best.concept_name : ""}, score ${best.score.toFixed(3)}`;
}

function summary(entity) {
  const tied = (entity.ties || []).map((t) => `; shares the name with ${t.ids.slice(1).join(", ")}, chosen by ${t.rule.replaceAll("_", " ")}`).join("");
  const head = entity.id ? `${entity.id} ${named(entity.candidates[0])} (score ${entity.score.toFixed(3)}${tied})` : nilSaid(entity);
  return [head, ...entity.candidates.slice(0, 5).map((c, i) => `${i + 1}. ${c.id} ${named(c)} ${c.score.toFixed(3)}`)].join("\n");
}

function showDetails(entity, mark) {
  document.querySelectorAll("mark.entity.selected").forEach((m) => m.classList.remove("selected"));
  mark.classList.add("selected");
  document.getElementById("details").hidden = false;
  document.getElementById("details-title").textContent = `${entity.text} (${entity.label}, ${entity.start}-${entity.end})`;
  const concept = document.getElementById("details-concept");
  concept.replaceChildren();
  if (entity.id) {
    concept.append(conceptLink(entity.id), ` ${named(entity.candidates[0])}, score ${entity.score.toFixed(3)}`);
    // Concepts that share the matched name: the ones it was chosen over, and the rule that chose.
    for (const tie of entity.ties || []) {
      const line = element("div", { class: "tie" }, "shares the name with ");
      tie.ids.slice(1).forEach((cui, i) => line.append(i ? ", " : "", conceptLink(cui)));
      line.append(`; chosen by ${tie.rule.replaceAll("_", " ")}`);
      concept.append(line);
    }
  } else {
    concept.append(nilSaid(entity));
  }
  const rows = entity.candidates.map((c, i) => {
    const row = element("tr");
    row.append(element("td", {}, String(i + 1)), element("td"), element("td", {}, named(c)), element("td", {}, c.score.toFixed(3)));
    row.children[1].append(conceptLink(c.id));
    return row;
  });
  document.querySelector("#candidates tbody").replaceChildren(...rows);
  document.getElementById("candidates").hidden = rows.length === 0;
}

function render(text, entities) {
  const out = document.getElementById("entities");
  out.replaceChildren();
  document.getElementById("details").hidden = true;
  // Offsets count code points, as Python does; a JavaScript string counts UTF-16 units.
  const points = Array.from(text);
  const slice = (start, end) => points.slice(start, end).join("");
  let at = 0;
  for (const entity of entities) {
    if (entity.start < at) continue; // overlapping spans: the first is shown
    out.append(slice(at, entity.start));
    const mark = element("mark", {
      class: entity.id ? "entity" : "entity nil", "data-id": entity.id ?? "NIL", title: summary(entity), tabindex: "0",
    }, slice(entity.start, entity.end));
    if (entity.id) {
      mark.style.background = COLORS[entity.label.toUpperCase()] ?? "#ddd";
      // How sure: a score at the threshold is pale, one of 1.0 (the mention is a name) full.
      mark.style.opacity = String(0.45 + 0.55 * Math.max(0, Math.min(1, (entity.score - 0.6) / 0.4)));
    }
    mark.append(element("span", { class: "label" }, entity.label), element("span", { class: "cui" }, entity.id ?? "NIL"));
    if (entity.id) mark.append(element("span", { class: "score" }, entity.score.toFixed(2)));
    mark.addEventListener("click", () => showDetails(entity, mark));
    mark.addEventListener("keydown", (event) => { if (event.key === "Enter") showDetails(entity, mark); });
    out.append(mark);
    at = entity.end;
  }
  out.append(slice(at, points.length));
}

// An error leaves no earlier answer on screen under it.
function clear() {
  document.getElementById("entities").replaceChildren();
  document.getElementById("details").hidden = true;
}

async function link(event) {
  event.preventDefault();
  const text = document.getElementById("text").value;
  const status = document.getElementById("status");
  status.textContent = "Linking…";
  status.classList.remove("error");
  try {
    const response = await fetch("/link", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ text }),
    });
    const answer = await response.json();
    if (!response.ok) {
      clear();
      status.textContent = answer.error ? answer.error.message : `HTTP ${response.status}`;
      status.classList.add("error");
      return;
    }
    render(text, answer.entities);
    status.textContent = `${answer.entities.length} entities`;
  } catch (error) {
    clear();
    status.textContent = `The service did not answer: ${error}`;
    status.classList.add("error");
  }
}

async function describe() {
  const response = await fetch("/info");
  const info = await response.json();
  pages = info.concept_pages;
  const linker = info.linker;
  const nil = linker.nil?.dictionary;
  const threshold = !nil ? "" : nil.threshold === null ? "; every entity is linked (no NIL threshold)"
    : `; NIL under ${nil.threshold}${nil.model ? " or where the vocabulary lacks the concept" : ""}`;
  document.getElementById("pipeline").textContent =
    `${info.pipeline.name} (${info.pipeline.components.join(", ")}): ${linker.vocabulary ?? "its saved vocabulary"}, ` +
    `${linker.names ?? "?"} names, encoder ${linker.encoder.model}${threshold}`;
}

document.getElementById("form").addEventListener("submit", link);
describe();

// The ask page: asks through the query API and gives feedback through the feedback API.
const form = document.getElementById("ask");
form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const error = document.getElementById("error");
  error.hidden = true;
  const response = await fetch("/api/v1/query", {
    method: "POST",
    headers: {"Content-Type": "application/json", "X-CSRFToken": form.csrfmiddlewaretoken.value},
    body: JSON.stringify({question: document.getElementById("question").value, mode: document.getElementById("mode").value}),
  });
  const body = await response.json();
  if (!response.ok) {
    error.textContent = Object.entries(body).map(([k, v]) => `${k}: ${v}`).join("; ");
    error.hidden = false;
    return;
  }
  document.getElementById("answer").textContent = body.answer;
  const action = document.getElementById("action");
  action.className = `badge ${body.action}`;
  action.textContent = `${body.action} · ${body.generator}` + (body.iterations === null ? "" : ` · ${body.iterations} iterations`);
  const external = body.external.provider ? [`searched ${body.external.provider} for "${body.external.query}": ${body.external.results} results`] : [];
  document.getElementById("notes").textContent = [...external, ...body.notes].join(" · ");
  document.getElementById("warnings").textContent =
    body.warnings.length ? `Warnings from past reviews: ${body.warnings.join(" · ")}` : "";
  form.dataset.responseId = body.response_id;
  document.getElementById("feedback-state").textContent = "";
  document.getElementById("timings").textContent =
    Object.entries(body.timings_ms).map(([k, v]) => `${k} ${v} ms`).join(" · ") + ` · response ${body.response_id}`;
  const list = document.getElementById("evidence");
  list.replaceChildren(...body.evidence.map((item) => {
    const li = document.createElement("li");
    if (item.cited) li.className = "cited";
    const badge = (text, cls) => Object.assign(document.createElement("span"), {className: `badge ${cls}`, textContent: text});
    const title = document.createElement("strong");
    title.textContent = item.title;
    const meta = document.createElement("div");
    meta.className = "meta";
    const fmt = (v) => (v === null ? "–" : v.toFixed(2));
    meta.textContent = `${item.source} · trust ${fmt(item.trust)} = relevance ${fmt(item.relevance)}, ` +
      `consistency ${fmt(item.consistency)}, agreement ${fmt(item.agreement)}` +
      (item.notes.length ? ` · ${item.notes.join("; ")}` : "");
    const text = document.createElement("div");
    text.append(...item.strips.map((strip) =>
      Object.assign(document.createElement("span"), {className: strip.kept ? "" : "dropped", textContent: strip.text + " "})));
    li.append(badge(item.bucket, item.bucket));
    if (item.origin !== "corpus") li.append(badge(item.origin, item.origin));
    li.append(title, meta, text);
    return li;
  }));
  document.getElementById("result").hidden = false;
});
// Feedback binds to the answer by its response id; a second click replaces the first.
document.querySelectorAll("#feedback button").forEach((button) => button.addEventListener("click", async () => {
  const response = await fetch("/api/v1/feedback", {
    method: "POST",
    headers: {"Content-Type": "application/json", "X-CSRFToken": form.csrfmiddlewaretoken.value},
    body: JSON.stringify({response_id: form.dataset.responseId, thumbs: Number(button.dataset.thumbs)}),
  });
  const body = await response.json();
  document.getElementById("feedback-state").textContent = response.ok
    ? `thanks: ${body.chunks} passage(s) credited` : Object.values(body).join("; ");
}));

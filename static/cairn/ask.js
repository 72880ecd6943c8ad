// The ask page: asks through the query API as a stream of server-sent events (progress, then the
// answer as it is written, then the recorded answer), re-opens a recorded answer (?answer=ID),
// gives feedback through the feedback API, and lets the asker mark where the answer was (a sentence
// of a passage, or none of them) through the mark API. Questions asked one after another form a
// conversation: each follows on from the ones before (the earlier turns are listed above the form)
// until "New conversation". No framework, no external assets; text from
// documents only ever becomes text nodes and attributes.
const $ = (id) => document.getElementById(id);
const form = $("ask");
const csrf = () => form.csrfmiddlewaretoken.value;
let current = null; // the recorded answer on show
let conversation = null; // the conversation the next question follows on from (null: a new one)

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = false;
  $("result").hidden = true; // the error replaces the answer, at the top, not under a stale one
}

function errorText(body) {
  if (!body || typeof body !== "object") return "Something went wrong. Please try again.";
  return Object.entries(body).map(([field, v]) => (field === "detail" ? `${v}` : `${field}: ${[].concat(v).join(" ")}`)).join("; ");
}

// Progress: one line per finished stage a reader cares about; the last line says what runs now.
const STEPS = {
  asked: () => "Question received",
  retrieve: (d) => `Searched your documents: ${d.passages} passage${d.passages === 1 ? "" : "s"} found`,
  verify: (d) => `Checked ${d.passages} passage${d.passages === 1 ? "" : "s"}: ${d.verified} verified`,
  correct: (d) => (d.searched ? `Searched the web: ${d.results} result${d.results === 1 ? "" : "s"}` : null),
};
const NEXT = {asked: "Searching your documents…", retrieve: "Checking the passages…", verify: "Writing the answer…", correct: "Writing the answer…"};

function progressStep(data) {
  const list = $("progress");
  const text = STEPS[data.stage] && STEPS[data.stage](data);
  if (!text && !NEXT[data.stage]) return;
  list.querySelector(".working")?.remove();
  if (text) list.append(el("li", {className: "done", textContent: text}));
  if (NEXT[data.stage]) list.append(el("li", {className: "working", textContent: NEXT[data.stage]}));
  list.hidden = false;
}

// Stream parsing: blank-line separated events of `event:` and one `data:` line (common/sse.py).
async function* events(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const {value, done} = await reader.read();
    buffer += decoder.decode(value || new Uint8Array(), {stream: !done});
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields = Object.fromEntries(block.split("\n").map((line) => [line.slice(0, line.indexOf(": ")), line.slice(line.indexOf(": ") + 2)]));
      if (fields.event) yield [fields.event, JSON.parse(fields.data)];
    }
    if (done) return;
  }
}

async function ask(question, mode) {
  const button = $("ask-button");
  button.disabled = true;
  form.setAttribute("aria-busy", "true");
  $("error").hidden = true;
  $("result").hidden = true;
  $("progress").replaceChildren(el("li", {className: "working", textContent: "Asking…"}));
  $("progress").hidden = false;
  let streamed = "";
  try {
    const response = await fetch("/api/v1/query", {
      method: "POST",
      headers: {"Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf()},
      body: JSON.stringify({question, mode, stream: true, conversation_id: conversation}),
    });
    if (!response.ok) {
      showError(errorText(await response.json().catch(() => null)));
      return;
    }
    for await (const [kind, data] of events(response)) {
      if (kind === "stage") progressStep(data);
      else if (kind === "text") {
        streamed = data.restart ? "" : streamed + data.text;
        showStreaming(streamed);
      } else if (kind === "answer") {
        if (current && current.conversation_id === data.conversation_id) addTurn(current);
        render(data);
        $("question").value = "";
        history.replaceState(null, "", `?answer=${data.response_id}`);
      } else if (kind === "error") showError(errorText(data));
    }
  } catch (error) {
    showError(`The answer could not be fetched (${error.message}). Please try again.`);
  } finally {
    button.disabled = false;
    form.removeAttribute("aria-busy");
    $("progress").querySelector(".working")?.remove();
    if (!$("result").hidden || !$("error").hidden) $("progress").hidden = true;
  }
}

// The conversation so far: each earlier turn's question (as typed) and the start of its answer,
// which re-opens it.
function addTurn(turn) {
  const answer = turn.answer.length > 160 ? `${turn.answer.slice(0, 160)}…` : turn.answer;
  const link = el("a", {href: `?answer=${encodeURIComponent(turn.response_id)}`, textContent: turn.asked || turn.question});
  $("turns").append(el("li", {}, link, el("div", {className: "meta", textContent: answer})));
  $("thread").hidden = false;
}

function startConversation() {
  conversation = null;
  current = null;
  $("turns").replaceChildren();
  $("thread").hidden = true;
  $("new-conversation").hidden = true;
  $("result").hidden = true;
  $("question").value = "";
  $("question").placeholder = "Ask a question about your documents";
  $("question").focus();
}

function showStreaming(text) {
  $("headline").textContent = "Writing the answer…";
  $("answer").textContent = text;
  for (const id of ["confidence", "actions", "reason", "disagreement", "checked", "marking"]) $(id).hidden = true;
  $("warnings").replaceChildren();
  $("warnings-label").hidden = true;
  $("sources").replaceChildren();
  $("sources-heading").hidden = true;
  $("set-aside").hidden = true;
  $("details").hidden = true;
  $("result").hidden = false;
}

const DISAGREE = "Sources disagree";
const WHERE_TO_LOOK = "Cairn could not confirm an answer; these passages look closest";
const NOT_STATED = "No passage states the answer"; // where-to-look answers recorded before WHERE_TO_LOOK
// What a where-to-look or disputed answer opens with, before the sentences it quotes.
const OPENINGS = [`${WHERE_TO_LOOK}:`, `${NOT_STATED}; these look related:`, `${DISAGREE}:`];

function headline(body) {
  if (body.answer.startsWith(DISAGREE)) return DISAGREE;
  if (body.outcome === "where_to_look") return body.answer.startsWith(NOT_STATED) ? NOT_STATED : WHERE_TO_LOOK;
  if (body.outcome !== "answered") return "Not in the knowledge base";
  const sources = new Set(body.citations.map((c) => c.n)).size;
  if (!sources) return "Not answered from the sources";
  const external = body.citations.some((c) => c.origin === "external");
  return `Answered from ${sources} verified source${sources === 1 ? "" : "s"}` + (external ? ", some from the web" : "");
}

// Citations [n] become links to their source card.
function linked(text) {
  const parts = text.split(/(\[\d+\])/);
  return parts.map((part) => {
    const n = /^\[(\d+)\]$/.exec(part)?.[1];
    return n ? el("a", {href: `#source-${n}`, className: "cite", textContent: part}) : document.createTextNode(part);
  });
}

// Where in a passage the sentences the answer drew on are: [start, end) spans, in order, not overlapping.
function highlights(text, strips) {
  const spans = [];
  for (const strip of strips) {
    const at = text.indexOf(strip);
    if (strip && at >= 0) spans.push([at, at + strip.length]);
  }
  spans.sort((a, b) => a[0] - b[0]);
  const kept = [];
  for (const span of spans) if (!kept.length || span[0] >= kept[kept.length - 1][1]) kept.push(span);
  return kept;
}

// text[from, to) with the highlighted parts in <mark>.
function highlighted(text, spans, from = 0, to = text.length) {
  const nodes = [];
  let at = from;
  for (const [start, end] of spans) {
    if (end <= at || start >= to) continue;
    if (start > at) nodes.push(document.createTextNode(text.slice(at, start)));
    nodes.push(el("mark", {textContent: text.slice(Math.max(start, at), Math.min(end, to))}));
    at = Math.min(end, to);
  }
  if (at < to) nodes.push(document.createTextNode(text.slice(at, to)));
  return nodes;
}

const sameSentence = (a, b) => a.split(/\s+/).join(" ").trim() === b.split(/\s+/).join(" ").trim();

// Where a sentence (a strip of the passage) sits in the passage as shown, whitespace aside, clear of
// the sentences placed already; null when the shown text does not hold it as such. The pattern is
// the sentence's own words, escaped, joined by \s+: no nested repetition to backtrack through.
function locate(text, sentence, placed) {
  const words = sentence.split(/\s+/).filter(Boolean);
  if (!words.length) return null;
  const pattern = new RegExp(words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("\\s+"), "g");
  for (let found; (found = pattern.exec(text));) {
    const span = [found.index, found.index + found[0].length];
    if (!placed.some(([start, end]) => span[0] < end && start < span[1])) return span;
    pattern.lastIndex = found.index + 1;
  }
  return null;
}

const excerpt = (sentence) => {
  const words = sentence.split(/\s+/).filter(Boolean);
  return words.slice(0, 10).join(" ") + (words.length > 10 ? "…" : "");
};

// Is this sentence of passage n the asker's mark on the answer on show?
const isMarked = (n, sentence) =>
  Boolean(current && current.mark && !current.mark.none && current.mark.n === n && sameSentence(sentence, current.mark.sentence));

// A passage's one "This answers it" button, which marks the sentence chosen among `choices`
// ({node, sentence}, in reading order): a click on a sentence, or Enter or Space on it, chooses it,
// and the arrow keys move between them, so a card is two stops of the Tab key and one or two clicks
// (a button after every sentence of every card gave a handbook answer of eight cards over forty).
// `first`: the sentence chosen to begin with, the answer's own where it quotes the passage.
function answersIt(n, choices, first) {
  const button = el("button", {type: "button", className: "answers-it", textContent: "This answers it"});
  button.dataset.n = n;
  button.choose = (index, focus = false) => {
    choices.forEach(({node}, i) => {
      node.setAttribute("aria-checked", String(i === index));
      node.tabIndex = i === index ? 0 : -1; // one stop per card: the chosen sentence
    });
    const {node, sentence} = choices[index];
    if (focus) node.focus();
    button.dataset.sentence = sentence;
    button.setAttribute("aria-label", `This answers it: [${n}] ${excerpt(sentence)}`);
    button.setAttribute("aria-pressed", String(isMarked(n, sentence)));
  };
  choices.forEach(({node}, i) => {
    node.setAttribute("role", "radio");
    node.addEventListener("click", () => button.choose(i));
    node.addEventListener("keydown", (event) => {
      const step = {ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1}[event.key];
      if (step) button.choose((i + step + choices.length) % choices.length, true);
      else if (event.key === " " || event.key === "Enter") button.choose(i);
      else return;
      event.preventDefault();
    });
  });
  button.choose(first);
  button.addEventListener("click", () => mark({n, sentence: button.dataset.sentence}, button));
  return button;
}

// A passage as shown, its sentences (strips) each one to choose when the passage may be marked;
// the sentences the shown text does not hold as such listed after it.
function passage(item, strips) {
  let text = readable(item.text);
  // A page's passage that opens with its heading, which is the document's title, does not say it
  // again under the card's title.
  const [opening, ...rest] = text.split("\n");
  if (item.title && rest.length && sameSentence(opening, item.title)) text = rest.join("\n").trim();
  const spans = highlights(text, strips);
  const sentences = item.origin === "corpus" && item.chunk_id ? item.strips.map((s) => s.text).filter((s) => s.trim()) : [];
  const placed = [];
  const apart = [];
  for (const sentence of sentences) {
    const at = locate(text, sentence, placed);
    if (at) placed.push([...at, sentence]);
    else apart.push(sentence);
  }
  placed.sort((a, b) => a[0] - b[0]);
  const choices = [];
  const choice = (sentence, ...children) => {
    const node = el("span", {className: "sentence"}, ...children);
    node.dataset.sentence = sentence;
    choices.push({node, sentence});
    return node;
  };
  const nodes = [];
  let from = 0;
  for (const [start, end, sentence] of placed) {
    nodes.push(...highlighted(text, spans, from, start), choice(sentence, ...highlighted(text, spans, start, end)));
    from = end;
  }
  nodes.push(...highlighted(text, spans, from));
  const list = apart.length ? el("ul", {className: "sentences"}, ...apart.map((s) => el("li", {}, choice(s, s)))) : null;
  const first = Math.max(0, choices.findIndex(({sentence}) => strips.some((s) => sameSentence(s, sentence))));
  return {nodes, list, button: choices.length ? answersIt(item.n, choices, first) : null};
}

// A chunk's block syntax (headings "# ", fenced code, ": " definitions, "- " items, "| " rows) as plain lines.
function readable(text) {
  return text.replace(/^```$/gm, "").replace(/^#{1,6} /gm, "").replace(/^[:|] /gm, "").replace(/^- /gm, "• ")
    .replace(/\n{3,}/g, "\n\n").trim();
}

function card(item, strips, cited) {
  const title = item.document_id
    ? el("a", {href: `/documents/${item.document_id}#chunk-${item.chunk_id}`, textContent: item.title || "Untitled"})
    : item.origin === "external" && /^https?:/.test(item.source)
      ? el("a", {href: item.source, rel: "noopener noreferrer", textContent: item.title || item.source})
      : el("span", {textContent: item.title || "Untitled"});
  const where = item.origin === "external" ? "from the web" : item.origin === "inferred" ? "inferred by the model" : item.collection;
  const added = item.document_added && `added ${new Date(item.document_added).toLocaleDateString()}`;
  const by = item.uploaded_by && `uploaded by ${item.uploaded_by}`;
  const provenance = [where, by, added, item.reputation === null ? null : `reputation ${Math.round(item.reputation * 100)}%`].filter(Boolean);
  // Where the passage sits in the file it was read from, opening it there: "page 12" opens the PDF
  // at #page=12, "slide 4" Cairn's view of the deck at that slide (the API builds the link).
  const placeText = item.location_label || (item.original_url ? "original file" : "");
  const place = !placeText ? null : item.original_url
    ? el("a", {href: item.original_url, className: "original", textContent: placeText})
    : el("span", {textContent: placeText});
  const shown = passage(item, strips);
  const quote = el("blockquote", {}, ...shown.nodes);
  if (!cited) quote.className = "plain";
  const sentences = el("div", {}, quote, shown.list);
  let row = null; // the card's "This answers it"
  let note = null; // where this card confirms the asker's mark
  if (shown.button) {
    sentences.setAttribute("role", "radiogroup");
    sentences.setAttribute("aria-label", `The sentences of [${item.n}]: choose the one that answers it`);
    row = el("div", {className: "mark-row"}, shown.button);
    note = el("p", {className: "meta mark-note"});
    note.setAttribute("role", "status");
  }
  return el("li", {id: `source-${item.n}`, className: cited ? "card cited" : "card", value: item.n},
    el("div", {className: "card-title"}, title),
    el("div", {className: "meta"}, provenance.join(" · "), place && provenance.length ? " · " : null, place),
    sentences, row, note);
}

function render(body) {
  current = body;
  if (body.conversation_id) {
    conversation = body.conversation_id;
    $("new-conversation").hidden = false;
    $("question").placeholder = "Ask a follow-up, or start a new conversation";
  }
  $("headline").textContent = headline(body);
  // A follow-up is answered as the question it means: say which.
  $("answered").textContent = body.rewritten_by ? `Answered: ${body.question}` : "";
  $("answered").hidden = !body.rewritten_by;
  // How sure: only a stated answer claims anything to be sure of.
  const sure = body.outcome === "answered" && body.confidence !== null;
  $("confidence").textContent = sure ? `Confidence ${Math.round(body.confidence * 100)}%` : "";
  $("confidence").hidden = !sure;
  // What a where-to-look or disputed answer opens with is its headline: not said again below it.
  const opening = OPENINGS.find((o) => body.answer.startsWith(o)) || "";
  $("answer").replaceChildren(...linked(body.answer.slice(opening.length).trim()));
  // A dispute: neither passage is taken as the answer; their cards say where each comes from.
  $("disagreement").hidden = !body.answer.startsWith(DISAGREE);
  // The output gate: what of the model's answer the sources did not support (the sentences under Details).
  const leftOut = body.sentences.filter((s) => s.verdict !== "shown");
  $("checked").textContent = !leftOut.length ? ""
    : body.generator === "extractive" ? "The model's answer was not supported by the sources; quoted from them instead."
    : `${leftOut.length} sentence${leftOut.length === 1 ? "" : "s"} left out: the sources do not support ${leftOut.length === 1 ? "it" : "them"}.`;
  $("checked").hidden = !leftOut.length;

  // What to mark in each cited passage: the answer's own sentences that cite it, where they are
  // quoted word for word (the extractive answer, a where-to-look answer's best sentences, without
  // its opening); else the strips the answer was written from.
  const quoted = {};
  for (const [, sentence, marks] of body.answer.slice(opening.length).matchAll(/(.*?)((?:\s*\[\d+\])+)/g)) {
    for (const [, n] of marks.matchAll(/\[(\d+)\]/g)) (quoted[n] ||= []).push(sentence.trim());
  }
  const strips = Object.fromEntries(body.citations.map((c) => {
    const text = readable(body.evidence.find((e) => e.n === c.n)?.text || "");
    const own = (quoted[c.n] || []).filter((sentence) => sentence && text.includes(sentence));
    return [c.n, own.length ? own : c.strips];
  }));
  const used = body.evidence.filter((e) => e.bucket === "VERIFIED" || e.cited);
  used.sort((a, b) => Number(b.cited) - Number(a.cited) || a.n - b.n);
  $("sources").replaceChildren(...used.map((e) => card(e, strips[e.n] || [], e.cited)));
  $("sources-heading").hidden = !used.length;
  const aside = body.evidence.filter((e) => !used.includes(e));
  $("rejected").replaceChildren(...aside.map((e) => card(e, [], false)));
  $("set-aside-count").textContent = aside.length;
  $("set-aside").hidden = !aside.length;

  // Warnings from past reviews: each once, on one short line (the whole text on hover).
  $("warnings").replaceChildren(...[...new Set(body.warnings)].map((w) => el("li", {textContent: w, title: w})));
  $("warnings-label").hidden = !body.warnings.length;

  // Where the answer was: any passage's sentence, or none of them (one mark, the asker's latest).
  $("marking").hidden = !body.evidence.length;
  $("mark-state").textContent = "";
  showMark();

  details(body);
  $("actions").hidden = false;
  $("reason").hidden = true;
  $("feedback-state").textContent = "";
  $("error").hidden = true;
  $("result").hidden = false;
}

const STAGES = ["rewrite", "embed_query", "retrieve", "rank", "verify", "correct", "refine", "recall", "generate", "output_gate", "total"];

function details(body) {
  const facts = [
    ["Retrieval judged", body.action || "–"], ["Written by", body.generator], ["Mode", body.mode],
    ...(body.iterations === null ? [] : [["Iterations", body.iterations]]),
    ...(body.external.provider ? [["Web search", `${body.external.provider}: "${body.external.query}", ${body.external.results} results`]] : []),
    ...body.notes.map((note) => ["Note", note]),
    ...body.sentences.filter((s) => s.verdict !== "shown").map((s) => ["Left out", `${s.sentence} (best support ${s.entailment.toFixed(2)})`]),
    ["Timings", STAGES.filter((k) => k in body.timings_ms).map((k) => `${k} ${Math.round(body.timings_ms[k])} ms`).join(" · ")],
    ["Response", body.response_id],
  ];
  $("details-list").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {textContent: k}), el("dd", {textContent: String(v)})]));
  const fmt = (v) => (v === null ? "–" : v.toFixed(2));
  const head = el("tr", {}, ...["#", "passage", "bucket", "trust", "relevance", "consistency", "agreement"].map((h) => el("th", {textContent: h})));
  $("scores").replaceChildren(head, ...body.evidence.map((e) => el("tr", {},
    ...[e.n, e.title, e.bucket, fmt(e.trust), fmt(e.relevance), fmt(e.consistency), fmt(e.agreement)].map((v) => el("td", {textContent: String(v)})))));
  $("details").hidden = false;
}

async function feedback(payload, thanks) {
  if (!current) return;
  const response = await fetch("/api/v1/feedback", {
    method: "POST",
    headers: {"Content-Type": "application/json", "X-CSRFToken": csrf()},
    body: JSON.stringify({response_id: current.response_id, ...payload}),
  });
  const body = await response.json().catch(() => null);
  $("feedback-state").textContent = response.ok ? thanks : errorText(body);
}

// The mark on show (current.mark): its sentence highlighted and chosen on its card, that card's
// button pressed, or "none of these sources" pressed.
function showMark() {
  for (const button of $("result").querySelectorAll("button.answers-it")) {
    const n = Number(button.dataset.n);
    const nodes = [...button.closest(".card").querySelectorAll(".sentence[role=radio]")];
    const marked = nodes.findIndex((node) => isMarked(n, node.dataset.sentence));
    nodes.forEach((node, i) => node.classList.toggle("marked", i === marked));
    button.choose(marked >= 0 ? marked : Math.max(0, nodes.findIndex((node) => node.getAttribute("aria-checked") === "true")));
  }
  $("mark-none").setAttribute("aria-pressed", String(Boolean(current && current.mark && current.mark.none)));
}

async function mark(payload, button) {
  if (!current) return;
  const note = button.closest(".card")?.querySelector(".mark-note") || $("mark-state");
  let response, body;
  try {
    response = await fetch(`/api/v1/answers/${encodeURIComponent(current.response_id)}/mark`, {
      method: "POST",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrf()},
      body: JSON.stringify(payload),
    });
    body = await response.json().catch(() => null);
  } catch (error) {
    note.textContent = `The mark could not be sent (${error.message}). Please try again.`;
    return;
  }
  for (const other of $("result").querySelectorAll(".mark-note, #mark-state")) other.textContent = "";
  if (!response.ok) {
    note.textContent = errorText(body);
    return;
  }
  current.mark = body; // a new mark replaces the old, here as on the server
  showMark();
  note.textContent = "Thanks: a curator will review it.";
}

$("mark-none").addEventListener("click", () => mark({none: true}, $("mark-none")));

form.addEventListener("submit", (event) => {
  event.preventDefault();
  ask($("question").value, $("mode").value);
});

document.querySelectorAll("#actions button[data-thumbs]").forEach((button) => button.addEventListener("click", () => {
  const up = button.dataset.thumbs === "1";
  $("reason").hidden = up;
  if (!up) $("reason-text").focus();
  feedback({thumbs: Number(button.dataset.thumbs)}, up ? "Thanks: marked as useful." : "Thanks: marked as not useful.");
}));

$("reason").addEventListener("submit", (event) => {
  event.preventDefault();
  feedback({thumbs: 0, comment: $("reason-text").value}, "Thanks: your reason was sent to the curators.");
  $("reason").hidden = true;
});

$("copy").addEventListener("click", async () => {
  const text = current ? current.answer : $("answer").textContent; // with its opening, which the headline shows
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No clipboard API (a page served over plain http to another host): select the text instead.
    const range = document.createRange();
    range.selectNodeContents($("answer"));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    document.execCommand("copy");
  }
  feedback({behaviour: "copied"}, "Copied.");
});

$("again").addEventListener("click", async () => {
  if (!current) return;
  await feedback({behaviour: "regenerated"}, "");
  ask(current.asked || current.question, current.mode);
});

$("new-conversation").addEventListener("click", startConversation);

// A recorded answer re-opened from "my questions" (or a shared link the reader may see).
const reopen = new URLSearchParams(location.search).get("answer");
if (reopen) {
  fetch(`/api/v1/answers/${encodeURIComponent(reopen)}`, {headers: {Accept: "application/json"}})
    .then(async (response) => (response.ok ? reopened(await response.json()) : showError("That answer is not yours to open, or no longer exists.")));
}

// A re-opened answer of one's own conversation shows the turns before it, and a next question follows on.
async function reopened(body) {
  render(body);
  if (!body.conversation_id) return;
  const response = await fetch(`/api/v1/conversations/${encodeURIComponent(body.conversation_id)}`, {headers: {Accept: "application/json"}});
  if (!response.ok) return; // a curator reading someone else's answer: not their conversation
  const {turns} = await response.json();
  for (const turn of turns.slice(0, turns.findIndex((t) => t.response_id === body.response_id))) addTurn(turn);
}

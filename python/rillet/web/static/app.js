// rillet web: the dev UI's page. Plain JavaScript, no build step and nothing fetched from
// elsewhere. The server sends each run's records as server-sent events (see rillet/web/wire.py).
"use strict";

const $ = (id) => document.getElementById(id);
const state = { agent: null, kinds: {}, lanes: {}, agentTools: {}, tree: new Map(), cards: new Map(), bubbles: new Map(), calls: new Map(), run: null };

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

function pretty(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return String(text); }
}

function show(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

async function api(path, body) {
  const init = body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const res = await fetch(path, init);
  const data = await res.json();
  if (!res.ok) throw new Error(data.error || res.statusText);
  return data;
}

function setStatus(text, cls) {
  const s = $("status");
  s.textContent = text;
  s.className = "status " + cls;
}

function scrollDown(box) { box.scrollTop = box.scrollHeight; }

// --- the agent's structure: kinds (ParallelAgent lays its children out as lanes), agent tools

function learnAgent(node) {
  state.kinds[node.name] = node.kind;
  if (node.kind === "ParallelAgent") state.lanes[node.name] = node.sub_agents.map((s) => s.name);
  for (const t of node.tools) if (t.agent) { state.agentTools[t.agent.name] = t.name; learnAgent(t.agent); }
  for (const s of node.sub_agents) learnAgent(s);
}

// the agent tree as declared, drawn when the page loads: sub-agents nested (a ParallelAgent's
// as lanes), each agent's tools, an agent called as a tool with its own tree under the tool

function agentNode(node, role) {
  const box = el("div", "anode");
  box.dataset.agent = node.name;
  const label = el("div", "label");
  label.append(el("span", "name", node.name));
  label.append(el("span", "badge", node.kind.replace(/Agent$/, "") || node.kind));
  if (role) label.append(el("span", "badge tool", role));
  if (node.description) label.append(el("span", "desc dim", node.description));
  box.append(label);
  if (node.tools.length) {
    const tools = el("div", "tools");
    for (const t of node.tools) {
      const chip = el("span", "tool-chip", "⚙ " + t.name);
      chip.dataset.tool = t.name;
      tools.append(chip);
    }
    box.append(tools);
  }
  const kids = el("div", "children" + (node.kind === "ParallelAgent" ? " lanes" : ""));
  for (const s of node.sub_agents) kids.append(agentNode(s, node.kind === "ChatModelAgent" ? "transfer" : null));
  for (const t of node.tools) if (t.agent) kids.append(agentNode(t.agent, "agent tool"));
  box.append(kids);
  return box;
}

function drawAgents(tree) {
  const box = $("agents");
  box.textContent = "";
  box.append(agentNode(tree, null));
}

// --- runs

function watch(run, label) {
  state.run = run.run;
  $("agents-box").open = false;  // the run paths take the room; the tree stays a click away
  loadSessions();  // its session is running now
  return new Promise((resolve) => follow(run, label, resolve));
}

function follow(run, label, resolve) {
  setStatus("running", "running");
  // a resume answers the pause: its agents are running again (a new interrupt marks them anew)
  if (label === "resume") document.querySelectorAll(".node.interrupted").forEach((n) => n.classList.remove("interrupted"));
  const head = el("div", "run-head", label + " · checkpoint " + run.checkpoint_id);
  $("timeline").append(head);
  const source = new EventSource(run.events);
  const handle = (e) => onRecord(JSON.parse(e.data), run);
  for (const type of ["run_start", "event", "delta", "event_end", "call"]) source.addEventListener(type, handle);
  source.addEventListener("run_end", (e) => { source.close(); handle(e); resolve(); });
  source.onerror = () => { source.close(); resolve(); };
}

// a reloaded page: the chat's runs so far, replayed from their records in order
async function replayRuns() {
  let runs;
  try { runs = await api("/api/runs"); } catch (e) { return; }
  for (const run of runs) {
    if (run.kind === "run") userBubble(run.text);
    await watch(run, run.kind);
  }
}

function onRecord(r, run) {
  if (r.type === "run_start") onRunStart(r);
  else if (r.type === "event") onEvent(r, run);
  else if (r.type === "delta") onDelta(r, run);
  else if (r.type === "event_end") onEventEnd(r, run);
  else if (r.type === "run_end") onRunEnd(r);
  else if (r.type === "call") onCall(r, run);
}

// a resume starts with what the person answered: approved, rejected (and why), or edited (to what)
function onRunStart(r) {
  for (const d of r.decisions || []) {
    $("timeline").append(decisionCard(d));
    // the question it answers (a replayed page's, or another page's) is answered
    document.querySelectorAll('.approval[data-interrupt="' + d.interrupt + '"]:not(.answered)').forEach((box) => answered(box, d.answer));
  }
  scrollDown($("timeline"));
}

function decisionCard(d) {
  const answer = d.answer && typeof d.answer === "object" ? d.answer : { decision: String(d.answer) };
  const decision = answer.decision || "answer";
  const last = d.address.length ? d.address[d.address.length - 1] : "";
  const tool = last.startsWith("tool:") ? last.split(":")[1] : null;
  const card = el("div", "card decision " + decision);
  card.dataset.interrupt = d.interrupt;
  const top = el("div", "card-top");
  if (d.address.length) top.append(pathChip(d.address.filter((a) => a.startsWith("agent:")).map((a) => a.slice(6))));
  top.append(el("span", "kind", "your answer · interrupt " + d.interrupt.slice(0, 8)));
  card.append(top);
  const what = tool ? " the call of " + tool : "";
  const verbs = { approve: "✔ approved" + what, reject: "✘ rejected" + what, edit: "✎ edited the arguments of" + (tool ? " " + tool : " the call") };
  card.append(el("div", "text", verbs[decision] || "answered: " + show(answer)));
  if (decision === "reject") card.append(el("div", "reason", answer.reason ? "reason: " + answer.reason : "no reason given"));
  if (decision === "edit") card.append(el("pre", "json", show(answer.arguments)));
  return card;
}

function key(run, seq) { return run.run + ":" + seq; }

function pathChip(path) {
  const chip = el("span", "path");
  path.forEach((name, i) => {
    if (i) chip.append(el("span", "sep", "›"));
    chip.append(el("span", "step", name));
  });
  return chip;
}

function onEvent(r, run) {
  noteTree(r);
  const card = el("div", "card " + (r.error ? "error" : r.action ? "action " + r.action.kind : r.role || "other") + (r.failed ? " failed" : ""));
  card.dataset.seq = r.seq;
  const top = el("div", "card-top");
  top.append(pathChip(r.path));
  const what = r.error ? r.error.kind + " error" : r.role === "tool" ? (r.failed ? "tool failed · " : "tool result · ") + r.tool_name : r.role === "assistant" ? "model" : r.action ? "action" : "output";
  top.append(el("span", "kind", what + (r.streaming ? " · streaming" : "")));
  if (r.call) {
    const call = callOf(run, r.call);
    call.cards.push(card);
    card.dataset.call = r.call;
    const chip = el("button", "small inspect", "inspect");
    chip.title = "what this " + (call.kind || "") + " call was sent, what came back, tokens and timing";
    chip.onclick = () => inspect(call);
    card._callChip = el("span", "call-meta dim");
    top.append(card._callChip, chip);
    callMeta(call);
  }
  card.append(top);
  const body = el("div", "text");
  card.append(body);
  card._body = body;
  card._agent = r.agent;
  state.cards.set(key(run, r.seq), card);
  if (r.role === "assistant") card._bubble = chatBubble(r);
  if (!r.open) fill(card, r);
  if (r.action) card.append(actionView(r.action, run));
  if (r.error) {
    card.append(el("pre", "err", r.error.type + ": " + r.error.message));
    chatError(r.error.kind + " error", r.agent, r.error.type + ": " + r.error.message, r.error.kind);
  }
  if (r.failed) chatError("tool failed", r.agent, r.tool_name + ": " + (r.content || ""), "tool");
  if (r.custom !== undefined) card.append(el("pre", "json", show(r.custom)));
  $("timeline").append(card);
  scrollDown($("timeline"));
}

function chatBubble(r) {
  const b = el("div", "bubble assistant");
  b.append(el("div", "who", r.agent));
  const t = el("div", "text");
  b.append(t);
  b._text = t;
  $("chat").append(b);
  return b;
}

// an error in the chat, where it happened: which kind (model, tool, guardrail, limit, agent), by whom
function chatError(title, agent, text, kind) {
  const b = el("div", "bubble error");
  b.dataset.kind = kind;
  b.append(el("div", "who", "⚠ " + title + (agent ? " · " + agent : "")));
  b.append(el("div", "text", text));
  $("chat").append(b);
  scrollDown($("chat"));
  return b;
}

function onDelta(r, run) {
  const card = state.cards.get(key(run, r.seq));
  if (!card) return;
  const tok = el("span", "token", r.text);
  card._body.append(tok);
  if (card._bubble) card._bubble._text.append(el("span", "token", r.text));
  scrollDown($("timeline"));
  scrollDown($("chat"));
}

function onEventEnd(r, run) {
  const card = state.cards.get(key(run, r.seq));
  if (!card) return;
  card.classList.add("ended");
  fill(card, r);
  if (r.error) {
    card.append(el("pre", "err", r.error));
    chatError("model error", card._agent, r.error, "model");
  }
}

function fill(card, r) {
  card._body.textContent = r.content || "";
  if (card._bubble) {
    card._bubble._text.textContent = r.content || "";
    if (!r.content) card._bubble.remove();
  }
  for (const c of r.tool_calls || []) {
    const call = el("div", "tool-call");
    call.append(el("span", "arrow", "→ calls "), el("b", null, c.name), el("span", "dim", " " + c.id));
    call.append(el("pre", "json", pretty(c.arguments)));
    card.append(call);
    noteTool(card, c.name);
  }
}

function actionView(a, run) {
  if (a.kind === "transfer") return el("div", "act", "⇢ transfer to " + a.to);
  if (a.kind === "exit") return el("div", "act", "exit");
  if (a.kind === "break_loop") return el("div", "act", "break loop (from " + a.from + ")");
  if (a.kind === "state_delta") return el("pre", "json", "session: " + show(a.delta));
  if (a.kind === "interrupt") {
    const box = el("div", "act");
    box.append(el("div", null, "interrupted: waiting for a person"));
    for (const ctx of a.interrupts) {
      box.append(el("div", "dim", ctx.address.join(" / ")));
      box.append(el("pre", "json", show(ctx.info)));
      $("chat").append(approvalBox(run.checkpoint_id, ctx.id, ctx.info, ctx.address));
    }
    scrollDown($("chat"));
    return box;
  }
  return el("pre", "json", show(a.value));
}

// --- the call inspector: every model and tool call, what was sent and what came back

function callOf(run, id) {
  const k = key(run, "call:" + id);
  let call = state.calls.get(k);
  if (!call) { call = { id, cards: [] }; state.calls.set(k, call); }
  return call;
}

function onCall(r, run) {
  const call = callOf(run, r.id);
  const { type, ...fields } = r;
  Object.assign(call, fields);
  callMeta(call);
}

function ms(value) { return value >= 1000 ? (value / 1000).toFixed(2) + " s" : Math.round(value) + " ms"; }

function when(seconds) { return seconds ? new Date(seconds * 1000).toISOString().replace("T", " ").replace("Z", " UTC") : "—"; }

// the card's summary: latency and tokens once the call has ended
function callMeta(call) {
  const parts = [];
  if (call.latency_ms !== undefined) parts.push(ms(call.latency_ms));
  else if (call.status === "running") parts.push("running…");
  if (call.usage) parts.push(call.usage.total_tokens + " tok");
  if (call.status === "error") parts.push("failed");
  for (const card of call.cards) if (card._callChip) card._callChip.textContent = parts.join(" · ");
  const open = $("call-dialog");
  if (open.open && open._call === call) inspect(call);
}

function field(dl, name, value) {
  dl.append(el("dt", null, name), el("dd", null, value));
}

function messageView(m) {
  const box = el("div", "sent-msg " + m.role);
  box.append(el("div", "role", m.role + (m.name ? " · " + m.name : "") + (m.tool_call_id ? " · " + m.tool_call_id : "")));
  if (m.content) box.append(el("pre", null, m.content));
  for (const c of m.tool_calls || []) box.append(el("pre", "json", "→ " + c.function.name + " " + c.id + "\n" + pretty(c.function.arguments)));
  return box;
}

function inspect(call) {
  const view = $("call-view");
  const dialog = $("call-dialog");
  dialog._call = call;
  view.textContent = "";
  $("call-title").textContent = call.kind === "tool" ? "Tool call · " + call.tool + " · " + call.call_id : "Model call · " + call.agent + " · " + call.id;
  const dl = el("dl", "call-facts");
  field(dl, "agent", (call.path || [call.agent]).join(" › "));
  field(dl, "status", call.status || "");
  if (call.kind === "model") field(dl, "model", call.model + (call.provider && call.provider !== call.model ? " (" + call.provider + ")" : ""));
  field(dl, "started", when(call.started));
  field(dl, "ended", when(call.ended));
  field(dl, "latency", call.latency_ms !== undefined ? ms(call.latency_ms) : "—");
  if (call.kind === "model") {
    const u = call.usage;
    field(dl, "tokens", u ? u.prompt_tokens + " prompt + " + u.completion_tokens + " completion = " + u.total_tokens + (u.cached_tokens ? " (" + u.cached_tokens + " cached)" : "") : "not reported by the model");
    if (call.finish_reason) field(dl, "finish reason", call.finish_reason);
  }
  view.append(dl);
  if (call.error) view.append(section("Error", el("pre", "err", call.error.type + ": " + call.error.message)));
  if (call.kind === "model") {
    const sent = el("div", "sent");
    for (const m of call.messages || []) sent.append(messageView(m));
    view.append(section("Sent: " + (call.messages || []).length + " messages", sent));
    const tools = el("div");
    if (!call.tools || !call.tools.length) tools.append(el("div", "dim", call.tools ? "no tools" : "not known"));
    for (const t of call.tools || []) {
      const d = el("details", "offered-tool");
      d.append(el("summary", null, t.name + " — " + t.description), el("pre", "json", JSON.stringify(t.parameters, null, 2)));
      tools.append(d);
    }
    view.append(section("Tools offered (" + (call.tools || []).length + ")", tools));
    view.append(section("Reply", call.reply ? messageView(call.reply) : el("div", "dim", call.status === "running" ? "not yet" : "none")));
  } else {
    view.append(section("Arguments", el("pre", "json", pretty(call.arguments || ""))));
    view.append(section("Result", call.result !== undefined && call.result !== null ? el("pre", call.status === "error" ? "err" : null, call.result) : el("div", "dim", call.status === "running" ? "not yet" : "none")));
  }
  if (!dialog.open) dialog.showModal();
}

// --- interrupts: approve / reject / edit, then the resumed run is watched like any other

function answered(box, data) {
  box.classList.add("answered");
  box.querySelectorAll("button, input, textarea").forEach((b) => { b.disabled = true; });
  box.append(el("div", "answered-note", "answered: " + (data && data.decision ? data.decision : show(data))));
}

function approvalBox(checkpointId, interruptId, info, address) {
  const box = el("div", "approval");
  box.dataset.interrupt = interruptId;
  const proposed = info && typeof info === "object" && "tool" in info;
  box.append(el("div", "approval-title", proposed ? "Approve the call of " + info.tool + "?" : "The run waits for an answer"));
  box.append(el("div", "dim", address.join(" / ") + " · interrupt " + interruptId.slice(0, 8)));
  box.append(el("pre", "json", show(proposed ? info.arguments : info)));
  const edit = el("textarea", "edit-args");
  edit.value = JSON.stringify(proposed ? info.arguments : {}, null, 2);
  edit.hidden = true;
  const reason = el("input", "reason");
  reason.placeholder = "reason (for reject)";
  const buttons = el("div", "buttons");
  const approve = el("button", "approve", "Approve");
  const reject = el("button", "reject", "Reject");
  const editBtn = el("button", "edit", "Edit…");
  const note = el("div", "err");
  buttons.append(approve, reject, reason, editBtn);
  box.append(buttons, edit, note);
  const answer = async (data) => {
    note.textContent = "";
    try {
      const run = await api("/api/resume", { checkpoint_id: checkpointId, targets: { [interruptId]: data } });
      answered(box, data);
      watch(run, "resume");
    } catch (e) { note.textContent = e.message; }
  };
  approve.onclick = () => answer({ decision: "approve" });
  reject.onclick = () => answer({ decision: "reject", reason: reason.value });
  editBtn.onclick = () => {
    if (edit.hidden) { edit.hidden = false; editBtn.textContent = "Run with these arguments"; return; }
    let args;
    try { args = JSON.parse(edit.value); } catch (e) { note.textContent = "the arguments are not JSON: " + e.message; return; }
    answer({ decision: "edit", arguments: args });
  };
  return box;
}

function onRunEnd(r) {
  const labels = { done: ["done", "idle"], interrupted: ["waiting for approval", "waiting"], error: ["failed", "failed"] };
  const [text, cls] = labels[r.status] || [r.status, "idle"];
  if (r.run === state.run) setStatus(text, cls);
  const end = el("div", "run-end " + r.status, "run " + r.status);
  end.dataset.run = r.run;
  if (state.agent && state.agent.durability === "step" && r.status !== "stopped") {
    const steps = el("button", "small steps", "steps…");
    steps.title = "the run's recorded steps: replay it, or fork a new run from any of them";
    steps.onclick = () => showSteps(r.run, end);
    end.append(" ", steps);
  }
  $("timeline").append(end);
  scrollDown($("timeline"));
  loadCheckpoints();
  loadSessions();
}

// --- replay and fork: a run recorded step by step (durability "step") starts again from any step

async function showSteps(runId, after) {
  const old = after.nextElementSibling;
  if (old && old.classList.contains("steps-box")) { old.remove(); return; }
  const box = el("div", "steps-box");
  box.dataset.run = runId;
  after.after(box);
  let data;
  try { data = await api("/api/runs/" + runId + "/steps"); } catch (e) { box.append(el("pre", "err", e.message)); return; }
  const head = el("div", "steps-head");
  head.append(el("span", "dim", data.steps.length + " recorded steps "));
  const replay = el("button", "small replay", "replay the run");
  replay.title = "a new run from every recorded step: nothing is called again";
  replay.onclick = () => fork(runId, data.steps.length, box, "replay of run " + runId);
  head.append(replay);
  box.append(head);
  const list = el("ol", "steps");
  list.start = 0;
  for (const st of data.steps) {
    const li = el("li", "step " + st.kind);
    li.append(el("span", "step-kind", st.kind + (st.agent ? " · " + st.agent + " #" + st.iteration : "")), el("span", "step-summary", " " + (st.summary || "")));
    const btn = el("button", "small fork", "fork here");
    btn.title = "a new run that replays the steps up to this one, then goes on live";
    btn.onclick = () => fork(runId, st.index + 1, box, "fork of run " + runId + " from step " + st.index);
    li.append(" ", btn);
    list.append(li);
  }
  box.append(list);
  scrollDown($("timeline"));
}

async function fork(runId, steps, box, label) {
  try {
    const run = await api("/api/fork", { run: runId, steps });
    box.remove();
    watch(run, label);
  } catch (e) { box.append(el("pre", "err", e.message)); }
}

// --- the run-path tree

function noteTree(r) {
  if (!r.path.length) return;  // an error of the run itself, from no agent
  let parent = null;
  for (let i = 1; i <= r.path.length; i++) {
    const id = r.path.slice(0, i).join("/");
    let node = state.tree.get(id);
    if (!node) {
      node = treeNode(r.path[i - 1], parent);
      state.tree.set(id, node);
    }
    parent = node;
  }
  document.querySelectorAll(".node.current").forEach((n) => n.classList.remove("current"));
  parent.classList.add("current");
  parent._count.textContent = String(Number(parent._count.textContent) + 1);
  if (r.action && r.action.kind === "interrupt") parent.classList.add("interrupted");
  if (r.error) parent.classList.add("failed");
  parent._lastCard = r;
}

function treeNode(name, parent) {
  const intro = $("tree").querySelector("p");
  if (intro) intro.remove();
  const node = el("div", "node");
  node.dataset.agent = name;
  const label = el("div", "label");
  const kind = state.kinds[name] || "";
  label.append(el("span", "name", name));
  if (kind) label.append(el("span", "badge", kind.replace(/Agent$/, "") || kind));
  if (state.agentTools[name]) label.append(el("span", "badge tool", "agent tool"));
  const count = el("span", "count", "0");
  label.append(count);
  node._count = count;
  const tools = el("div", "tools");
  node._tools = tools;
  const lanes = el("div", "children lanes");
  const kids = el("div", "children");
  node._lanes = lanes;
  node._kids = kids;
  node.append(label, tools, lanes, kids);
  // a parallel agent's own children run side by side; what runs after it (a sequence's
  // next step, whose run path extends the parallel one's) stacks below
  const inLane = parent && (state.lanes[parent.dataset.agent] || []).includes(name);
  (parent ? (inLane ? parent._lanes : parent._kids) : $("tree")).append(node);
  return node;
}

function noteTool(card, name) {
  const node = document.querySelector(".node.current");
  if (!node) return;
  // one chip per tool, counting its calls: a chat of many turns stays one line per agent
  node._chips = node._chips || new Map();
  let chip = node._chips.get(name);
  if (!chip) {
    chip = el("span", "tool-chip");
    chip._calls = 0;
    node._chips.set(name, chip);
    node._tools.append(chip);
  }
  chip._calls += 1;
  chip.textContent = "⚙ " + name + (chip._calls > 1 ? " ×" + chip._calls : "");
}

// --- sessions: the chats in the session store; open one to see its turns and continue it

async function loadSessions() {
  const box = $("sessions");
  let list;
  try { list = await api("/api/sessions"); } catch (e) { box.textContent = e.message; return; }
  box.textContent = "";
  const table = el("table", "checkpoint-list session-list");
  const head = el("tr");
  for (const h of ["session", "turns", "updated", ""]) head.append(el("th", null, h));
  table.append(head);
  for (const s of list) {
    const row = el("tr", s.current ? "current" : null);
    row.dataset.session = s.id;
    const cell = el("td");
    if (s.current) cell.append(el("span", "dim", "this chat"));
    else {
      const open = el("button", "small open", "open");
      open.onclick = () => openSession(s.id);
      cell.append(open);
    }
    const updated = s.updated ? age(Date.now() / 1000 - s.updated) + " ago" : "—";
    const id = el("td", "mono", s.id);
    if (s.running) id.append(el("span", "running", " ● running"));
    row.append(id, el("td", "turns", String(s.turns)), el("td", null, updated), cell);
    table.append(row);
    if (s.current) $("session-name").textContent = "session " + s.id;
  }
  box.append(table);
}

function clearChat() {
  $("chat").textContent = "";
  $("timeline").textContent = "";
  $("tree").textContent = "";
  state.tree.clear();
  setStatus("idle", "idle");
}

// an opened session: its turns in the chat (greyed: said before), its state, then new turns continue it
function showSession(view) {
  const head = el("div", "session-head");
  head.dataset.session = view.id;
  head.append(el("div", "who", "session " + view.id + " · " + view.turns.length + " turns" + (view.running.length ? " · a run is going" : "")));
  const values = Object.keys(view.values || {}).length ? JSON.stringify(view.values, null, 2) : "no session values";
  const st = el("details", "session-state");
  st.append(el("summary", null, "state"), el("pre", "json", values));
  head.append(st);
  $("chat").append(head);
  for (const m of view.summary || []) $("chat").append(historyBubble(m, "summary"));
  for (const t of view.turns) for (const m of t.messages) if (m.role === "user" || (m.role === "assistant" && m.content)) $("chat").append(historyBubble(m, "turn " + t.index));
  $("session-name").textContent = "session " + view.id;
  scrollDown($("chat"));
}

function historyBubble(m, label) {
  const b = el("div", "bubble history " + m.role);
  b.append(el("div", "who", label + " · " + m.role), el("div", "text", m.content || ""));
  return b;
}

async function openSession(id) {
  const view = await api("/api/sessions/open", { id });
  clearChat();
  showSession(view);
  loadSessions();
}

// --- checkpoints

function age(seconds) {
  if (seconds < 60) return Math.round(seconds) + " s";
  if (seconds < 3600) return Math.round(seconds / 60) + " min";
  if (seconds < 86400) return Math.round(seconds / 3600) + " h";
  return Math.round(seconds / 86400) + " d";
}

async function loadCheckpoints() {
  const box = $("checkpoints");
  let list;
  try { list = await api("/api/checkpoints"); } catch (e) { box.textContent = e.message; return; }
  box.textContent = "";
  if (!list.length) { box.append(el("p", "dim", "No checkpoints: a run saves one when it is interrupted.")); return; }
  const table = el("table", "checkpoint-list");
  const head = el("tr");
  for (const h of ["id", "size", "age", ""]) head.append(el("th", null, h));
  table.append(head);
  for (const c of list) {
    const row = el("tr");
    row.dataset.checkpoint = c.id;
    const open = el("button", "small open", "open");
    open.onclick = () => openCheckpoint(c.id);
    const cell = el("td");
    cell.append(open);
    row.append(el("td", "mono", c.id), el("td", null, c.size < 0 ? "?" : c.size + " B"), el("td", null, age(c.age)), cell);
    table.append(row);
  }
  box.append(table);
}

function section(title, content) {
  const s = el("section", "cp-section");
  s.append(el("h3", null, title), content);
  return s;
}

async function openCheckpoint(id) {
  const view = $("checkpoint-view");
  view.textContent = "";
  $("checkpoint-title").textContent = "Checkpoint " + id;
  $("checkpoint-dialog").showModal();
  let cp;
  try { cp = await api("/api/checkpoints/" + encodeURIComponent(id)); } catch (e) { view.append(el("pre", "err", e.message)); return; }
  const agent = cp.agent ? (cp.agent.name || "") + (cp.agent.type ? " (" + cp.agent.type + ")" : "") : "not recorded";
  view.append(el("div", "dim", cp.size + " bytes · agent " + agent + (cp.streaming ? " · streaming" : "")));
  const inputs = el("div");
  for (const m of cp.input) inputs.append(el("div", "msg", m.role + ": " + (m.content || "")));
  view.append(section("Input", inputs));
  view.append(section("Session values", el("pre", "json", JSON.stringify(cp.session_values, null, 2))));
  const events = el("ol", "cp-events");
  for (const e of cp.events) {
    const li = el("li");
    li.append(pathChip(e.path));
    const calls = (e.tool_calls || []).map((c) => "→ " + c.name + " " + c.arguments).join("  ");
    const act = e.action ? " [" + e.action.kind + (e.action.to ? " → " + e.action.to : "") + "]" : "";
    li.append(el("span", null, " " + (e.role || "") + (e.tool_name ? "[" + e.tool_name + "]" : "") + ": " + (e.content || "") + " " + calls + act));
    events.append(li);
  }
  view.append(section("Events (" + cp.events.length + ")", events));
  const ints = el("div");
  const roots = cp.interrupts.filter((i) => i.root_cause), others = cp.interrupts.filter((i) => !i.root_cause);
  for (const i of [...roots, ...others]) {  // the points to answer first; their parents' states below, folded
    const box = el("div", "cp-interrupt" + (i.root_cause ? " root" : ""));
    box.append(el("div", "mono", i.id + (i.root_cause ? " · root cause" : "")), el("div", null, "address: " + i.address.join(" / ")));
    const stateView = el("details");
    stateView.open = i.root_cause;
    stateView.append(el("summary", null, "state"), el("pre", "json", JSON.stringify(i.state, null, 2)));
    box.append(stateView);
    if (i.root_cause) {
      let info = null;
      try { info = i.state && i.state.arguments ? { tool: i.address[i.address.length - 1].split(":")[1], arguments: JSON.parse(i.state.arguments) } : null; } catch (e) { info = null; }
      const ask = approvalBox(id, i.id, info, i.address);
      const close = () => $("checkpoint-dialog").close();
      ask.querySelectorAll("button").forEach((b) => b.addEventListener("click", () => setTimeout(() => { if (ask.classList.contains("answered")) close(); }, 300)));
      box.append(ask);
    }
    ints.append(box);
  }
  view.append(section("Interrupts (" + cp.interrupts.length + ")", ints));
}

// --- chat

function userBubble(text) {
  const b = el("div", "bubble user");
  b.append(el("div", "text", text));
  $("chat").append(b);
  scrollDown($("chat"));
}

async function send(text) {
  userBubble(text);
  try {
    const run = await api("/api/runs", { text });
    watch(run, "run");
  } catch (e) {
    $("chat").append(el("div", "err", e.message));
  }
}

function start() {
  $("chat-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("chat-input").value.trim();
    if (!text) return;
    $("chat-input").value = "";
    send(text);
  });
  $("chat-input").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("chat-form").requestSubmit(); }
  });
  $("new-chat").onclick = async () => {
    await api("/api/reset", {});
    clearChat();
    loadSessions();
  };
  $("refresh-checkpoints").onclick = loadCheckpoints;
  api("/api/agent").then((a) => {
    state.agent = a;
    learnAgent(a);
    drawAgents(a);
    $("agent-name").textContent = a.name + " · " + a.kind;
    replayRuns();
  });
  loadCheckpoints();
  loadSessions();
}

start();

// The jianmu-like console: asks questions through the server's /api/ routes and renders a run's
// Server-Sent Events (tool-call cards, the streamed answer, approvals, usage) and its tree's node
// statuses, the conversations a checkpoint store keeps (their versions, the state saved in each,
// forking from one) and an inspector of the current run's state. Plain JavaScript; its one
// dependency, the tree's layout (dagre), is shipped in the package (treeview.js). Streams are read with fetch(), not EventSource, because EventSource cannot send
// the bearer token of a protected server. Every piece of server data reaches the page through
// textContent, never as HTML, with one exception: an answer's markdown, which the server renders
// and sanitises (`answer_html`, see server/_markdown.py) and the page parses inertly (DOMParser).
"use strict";

(() => {
  const TOKEN_KEY = "jianmu-like-token";
  const $ = (id) => document.getElementById(id);
  const state = {
    token: null,
    threadId: null,
    runId: null,
    running: false,
    streams: null, // AbortController of the current run's streams
    tree: null, // the drawing of the tree (treeview.js)
    breakpoints: [], // the server's: [{node}|{tool}|{status, node?}|{event}]
    pausedAt: null, // the node id a run is paused before
    timeline: { frames: [], at: null, calls: [] }, // the current run's steps; `at` null: live
    view: null, // elements of the current run
    checkpoints: false, // the server keeps a checkpoint store: threads, versions, forks
    fork: null, // {threadId, seq}: the next question continues that saved version
    replaying: null, // the recording whose replay the page shows (its tree drawn instead of the agent's)
  };

  // One wording of a run's status, for the header's badge and the footer's alike.
  const STATUS_WORDS = {
    idle: "idle",
    running: "running",
    suspended: "waiting for approval",
    success: "success",
    failure: "failed",
    cancelled: "cancelled",
    cancelling: "stopping…",
    error: "error",
  };

  // ------------------------------------------------------------------ helpers
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function pretty(value) {
    if (value === undefined || value === null) return "";
    if (typeof value === "string") return value;
    return JSON.stringify(value, null, 2);
  }

  function showError(message) {
    const box = $("error");
    box.textContent = message || "";
    box.hidden = !message;
  }

  function statusBadge(status) {
    const badge = el("span", "badge", STATUS_WORDS[status] || status);
    badge.dataset.status = status;
    return badge;
  }

  // The header's badge and the footer's (while a run is shown) say the same words.
  function setStatus(status, words) {
    for (const badge of [$("run-status"), document.querySelector("#usage .badge")]) {
      if (!badge) continue;
      badge.dataset.status = status;
      badge.textContent = words || STATUS_WORDS[status] || status;
    }
  }

  // An answer's HTML, rendered and sanitised by the server, parsed inertly (no script runs in
  // a DOMParser document) and moved into the page; the CSP (no inline script or handler) stands
  // behind the sanitiser.
  function showHtml(target, html) {
    const parsed = new DOMParser().parseFromString(html, "text/html");
    target.replaceChildren(...parsed.body.childNodes);
    target.classList.add("markdown");
  }

  function setRunning(running) {
    state.running = running;
    $("ask").disabled = running;
    $("followup").disabled = !running;
    $("send-followup").disabled = !running;
    $("stop").disabled = !running;
  }

  function scrollDown() {
    window.scrollTo(0, document.body.scrollHeight);
  }

  // ------------------------------------------------------------------ the token
  function readToken() {
    const match = location.hash.match(/(?:^#|&)token=([^&]*)/);
    if (match) {
      sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
      history.replaceState(null, "", location.pathname + location.search); // out of sight and history
    }
    state.token = sessionStorage.getItem(TOKEN_KEY);
  }

  function askToken(wrong) {
    $("token-panel").hidden = false;
    $("token-input").placeholder = wrong ? "that token was refused; try again" : "token";
    $("token-input").focus();
  }

  function headers(extra) {
    const all = Object.assign({}, extra);
    if (state.token) all.Authorization = "Bearer " + state.token;
    return all;
  }

  class Unauthorized extends Error {}

  async function api(method, path, body) {
    const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
    if (body !== undefined) init.body = JSON.stringify(body);
    const response = await fetch(path, init);
    if (response.status === 401) {
      askToken(Boolean(state.token));
      throw new Unauthorized("this server needs its access token");
    }
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(data.error || `${response.status} ${response.statusText}`);
    return data;
  }

  // ------------------------------------------------------------------ Server-Sent Events over fetch
  // Calls onMessage(event, data) for each message of the stream at `path` until the server ends
  // it (after the run finished); reconnects with Last-Event-ID when the connection breaks.
  async function follow(path, onMessage, signal) {
    let lastId = 0;
    let failures = 0;
    while (!signal.aborted) {
      let response;
      try {
        response = await fetch(path, {
          headers: headers(lastId ? { Accept: "text/event-stream", "Last-Event-ID": String(lastId) } : { Accept: "text/event-stream" }),
          signal,
          cache: "no-store",
        });
      } catch (error) {
        if (signal.aborted) return;
        if (++failures > 30) throw error;
        await new Promise((resolve) => setTimeout(resolve, 1000));
        continue;
      }
      if (response.status === 401) {
        askToken(Boolean(state.token));
        throw new Unauthorized("this server needs its access token");
      }
      if (!response.ok) {
        const data = await response.json().catch(() => ({}));
        throw new Error(data.error || `${response.status} ${response.statusText}`);
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      let fields = {};
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return; // the server ends a stream once its run has finished
          failures = 0;
          buffer += value;
          const lines = buffer.split("\n");
          buffer = lines.pop();
          for (let line of lines) {
            if (line.endsWith("\r")) line = line.slice(0, -1);
            if (line === "") {
              if (fields.data !== undefined) {
                if (fields.id) lastId = Number(fields.id);
                onMessage(fields.event || "message", JSON.parse(fields.data));
              }
              fields = {};
            } else if (!line.startsWith(":")) {
              const colon = line.indexOf(":");
              const name = colon < 0 ? line : line.slice(0, colon);
              let value = colon < 0 ? "" : line.slice(colon + 1);
              if (value.startsWith(" ")) value = value.slice(1);
              fields[name] = name === "data" && fields.data !== undefined ? fields.data + "\n" + value : value;
            }
          }
        }
      } catch (error) {
        if (signal.aborted) return;
        if (++failures > 30) throw error;
        await new Promise((resolve) => setTimeout(resolve, 1000)); // then resume after lastId
      }
    }
  }

  // ------------------------------------------------------------------ the tree
  // Drawn by treeview.js (a graph laid out by the vendored dagre); the console only sets statuses.
  async function loadTree() {
    try {
      const { tree, checkpoints, models } = await api("GET", "/api/agent");
      state.checkpoints = checkpoints;
      $("models").textContent = (models || []).map((m) => `model: ${m}`).join("; ");
      state.tree = window.JianmuTree.create($("tree"), tree, { onSelect: toggleNodeBreakpoint });
    } catch (error) {
      $("tree").replaceChildren(el("p", "muted", `tree unavailable: ${error.message}`));
      return;
    }
    await loadBreakpoints();
    await loadSubstitutions();
  }

  // The server's substitution rules (POST /api/substitutions): a badge on each forced node.
  async function loadSubstitutions() {
    try {
      const { forced } = await api("GET", "/api/substitutions");
      state.tree?.substitute(forced);
    } catch (error) {
      if (!(error instanceof Unauthorized)) showError(`could not read the substitutions: ${error.message}`);
    }
  }

  // ------------------------------------------------------------------ breakpoints
  // The server's (every run pauses there): a click on a node sets or clears one, a tool's name
  // sets one before its calls. A pause is a pending approval of kind "breakpoint" (drawApprovals).
  async function loadBreakpoints() {
    try {
      const { breakpoints } = await api("GET", "/api/breakpoints");
      showBreakpoints(breakpoints);
    } catch (error) {
      if (!(error instanceof Unauthorized)) showError(`could not read the breakpoints: ${error.message}`);
    }
  }

  async function saveBreakpoints(list) {
    try {
      const { breakpoints } = await api("POST", "/api/breakpoints", { breakpoints: list });
      showBreakpoints(breakpoints);
    } catch (error) {
      showError(`could not set the breakpoints: ${error.message}`);
    }
  }

  function showBreakpoints(list) {
    state.breakpoints = list;
    const items = $("breakpoint-list");
    items.replaceChildren();
    list.forEach((item, index) => {
      const where = breakpointLabel(item);
      const row = el("li", "breakpoint");
      row.dataset.node = item.node ?? "";
      row.dataset.tool = item.tool ?? "";
      const remove = el("button", "small", "×");
      remove.type = "button";
      remove.title = `remove the breakpoint on ${where}`;
      remove.addEventListener("click", () => saveBreakpoints(state.breakpoints.filter((_, i) => i !== index)));
      row.append(el("span", "bp-dot"), el("span", null, where), remove);
      items.append(row);
    });
    markTree();
  }

  // A node's name where the drawing knows it, else the rule's own text.
  function nodeLabel(id) {
    return state.tree?.nodes.get(id)?.data.name || id;
  }

  function breakpointLabel(item) {
    if (item.event !== undefined) return `after event ${item.event}`;
    if (item.status !== undefined) return `after ${item.node !== undefined ? nodeLabel(item.node) : "any node"} ${item.status}`;
    return item.node !== undefined ? `node ${nodeLabel(item.node)}` : `tool ${item.tool}`;
  }

  // A rule on a node itself (not on its status): the ones the drawing marks and a click toggles.
  function onNode(b) {
    return b.node !== undefined && b.status === undefined;
  }

  function markTree() {
    const nodes = (state.breakpoints || []).filter(onNode).map((b) => b.node);
    state.tree?.mark(nodes, state.pausedAt || null);
  }

  function toggleNodeBreakpoint(id) {
    const list = state.breakpoints || [];
    const has = list.some((b) => onNode(b) && b.node === id);
    saveBreakpoints(has ? list.filter((b) => !(onNode(b) && b.node === id)) : [...list, { node: id }]);
  }

  function addToolBreakpoint(event) {
    event.preventDefault();
    const name = $("break-tool").value.trim();
    if (!name) return;
    $("break-tool").value = "";
    saveBreakpoints([...(state.breakpoints || []), { tool: name }]);
  }

  // A pause: where it stopped, the run's state (read from the server), an editor for the keys to
  // change (a JSON object, checked against the state schema by the server), Continue/Step/Skip.
  function drawPause(item, list) {
    const box = el("div", "approval breakpoint");
    box.dataset.approvalId = item.id;
    const node = item.arguments?.node;
    const name = state.tree?.nodes.get(node)?.data.name || item.tool;
    box.append(el("div", "paused-at", `Paused before ${name} (${node}, ${item.arguments?.type || "node"})`));
    const trigger = item.arguments?.trigger || {};
    if (trigger.status !== undefined) box.append(el("div", "paused-why", `after ${trigger.node} finished ${trigger.status}`));
    if (trigger.event !== undefined) box.append(el("div", "paused-why", `after event ${trigger.event}${trigger.node ? ` from ${trigger.node}` : ""}`));
    const shown = el("details", "state-view");
    const stateText = el("pre", "state", "loading…");
    shown.append(el("summary", null, "state of the run"), stateText);
    const edit = el("textarea", "state-edit");
    edit.value = "{}";
    edit.rows = 3;
    edit.spellcheck = false;
    edit.setAttribute("aria-label", "state keys to change, as a JSON object");
    box.append(shown, el("div", "label", "change state keys (JSON object)"), edit);
    const read = item.run_id
      ? api("GET", `/api/runs/${encodeURIComponent(item.run_id)}/state`)
      : Promise.reject(new Error("it is saved in the store; it resumes once decided"));
    read
      .then((read) => {
        stateText.textContent = pretty(read.state);
      })
      .catch((error) => {
        stateText.textContent = `could not read the state: ${error.message}`;
      });
    const buttons = el("div", "buttons");
    const go = (label, className, decision, step) => {
      const button = el("button", className, label);
      button.type = "button";
      button.addEventListener("click", () => resumePause(item, box, decision, step));
      buttons.append(button);
    };
    go("Continue", "approve continue", "approve", false);
    go("Step", "step", "approve", true);
    go("Skip node", "deny skip", "deny", false);
    box.append(buttons);
    list.append(box);
    state.pausedAt = node;
    markTree();
  }

  async function resumePause(item, box, decision, step) {
    const body = { decision, thread_id: item.thread_id };
    if (decision === "approve") {
      let changes;
      try {
        changes = JSON.parse(box.querySelector("textarea.state-edit").value || "{}");
      } catch (error) {
        showError(`the state changes are not JSON: ${error.message}`);
        return;
      }
      const args = {};
      if (step) args.step = true;
      if (changes && Object.keys(changes).length) args.state = changes;
      if (Object.keys(args).length) body.arguments = args;
    }
    for (const button of box.querySelectorAll("button")) button.disabled = true;
    try {
      followResumed(item, await api("POST", `/api/approvals/${encodeURIComponent(item.id)}`, body));
      showError("");
      box.remove();
      state.pausedAt = null;
      markTree();
      $("approvals").hidden = $("approval-list").children.length === 0;
    } catch (error) {
      for (const button of box.querySelectorAll("button")) button.disabled = false;
      showError(`could not go on: ${error.message}`);
    }
  }

  // A new run (or conversation) starts from a grey tree: statuses are a run's, not the page's.
  function resetTree() {
    $("tree-caption").textContent = "";
    state.tree?.reset();
    resetTimeline();
  }

  function onNodes(data) {
    const changes = data.changes || [];
    recordFrame(changes, data.state || [], data.recorded);
    if (state.timeline.at === null) state.tree?.apply(changes);
  }

  // ------------------------------------------------------------------ the timeline
  // Each batch of the run's `nodes` stream is a step of the timeline (the tree after a tick, or
  // while a node works): every node's status then and what changed. The model and tool calls
  // come on the run's other stream, numbered by the loop's iteration: a step shows the calls of
  // its iteration (the number of times a model node had started by then). Scrubbing draws that
  // step; "live" follows the run again.
  function resetTimeline() {
    state.timeline = { frames: [], at: null, calls: [] };
    $("timeline").hidden = true;
    $("timeline-detail").replaceChildren();
  }

  // `patch`: the state's changes since the step before (RFC 6902, key by key at the top level;
  // the first step's: the state the run began from), so each step keeps the state before it
  // and after it, for the diff a scrubbed step shows.
  // `recorded`: a diverged replay's step, shown as the recording's event says (no state).
  function recordFrame(changes, patch, recorded) {
    const frames = state.timeline.frames;
    const last = frames.length ? frames[frames.length - 1] : { statuses: {}, iteration: 0, state: {} };
    const after = { ...last.state };
    const diff = [];
    for (const op of patch) {
      const key = op.path.slice(1).replace(/~1/g, "/").replace(/~0/g, "~");
      diff.push({ op: op.op, key, before: last.state[key], after: op.value });
      if (op.op === "remove") delete after[key];
      else after[key] = op.value;
    }
    const statuses = { ...last.statuses };
    let iteration = last.iteration;
    for (const change of changes) {
      const type = state.tree?.nodes.get(change.id)?.data.type || "";
      if (change.status === "RUNNING" && statuses[change.id] !== "RUNNING" && /LLM/.test(type)) iteration += 1;
      statuses[change.id] = change.status;
    }
    frames.push({ statuses, changes, iteration, state: after, diff: frames.length ? diff : [], recorded });
    drawTimeline();
  }

  function timelineEvent(iteration, text) {
    state.timeline.calls.push({ iteration: Number(iteration) || 0, text });
    if (state.timeline.at !== null) showFrame(state.timeline.at);
  }

  function drawTimeline() {
    const { frames, at } = state.timeline;
    $("timeline").hidden = frames.length === 0;
    const slider = $("timeline-range");
    slider.max = String(Math.max(0, frames.length - 1));
    if (at === null) slider.value = slider.max;
    $("timeline-live").disabled = at === null;
    $("timeline-label").textContent = at === null ? `live · ${frames.length} steps` : `step ${at + 1} of ${frames.length}`;
  }

  function showFrame(index) {
    const frames = state.timeline.frames;
    if (!frames.length) return;
    const at = Math.max(0, Math.min(frames.length - 1, index));
    state.timeline.at = at;
    const frame = frames[at];
    const running = Object.keys(frame.statuses).filter((id) => frame.statuses[id] === "RUNNING");
    state.tree?.setStatuses(frame.statuses, [...frame.changes.map((c) => c.id), ...running]);
    $("timeline-range").value = String(at);
    const detail = $("timeline-detail");
    detail.replaceChildren();
    if (frame.recorded) {
      const { type, node, tick } = frame.recorded;
      detail.append(el("li", "recorded", `from the recording (the replay diverged before): ${type} from ${node} at its tick ${tick}`));
    }
    for (const change of frame.changes) {
      const item = el("li", "change", `${change.name}: ${change.status}`);
      item.dataset.id = change.id;
      item.dataset.status = change.status;
      detail.append(item);
    }
    for (const change of frame.diff) detail.append(stateChange(change));
    for (const call of state.timeline.calls) {
      if (call.iteration === frame.iteration) detail.append(el("li", "call", `iteration ${call.iteration}: ${call.text}`));
    }
    if (frame.iteration > 0) detail.append(modelRequest(frame.iteration));
    drawTimeline();
  }

  // What the model was sent at an iteration (the run's n-th model call, redacted), read when
  // opened: a request holds the whole conversation, too much to carry on every step.
  function modelRequest(iteration) {
    const item = el("li", "request");
    const box = el("details");
    box.append(el("summary", null, `iteration ${iteration}: the model's request`));
    const body = el("pre", "request-body", "loading…");
    box.append(body);
    const runId = state.runId;
    box.addEventListener("toggle", async () => {
      if (!box.open || box.dataset.loaded) return;
      box.dataset.loaded = "1";
      try {
        const data = await api("GET", `/api/runs/${encodeURIComponent(runId)}/requests`);
        const sent = (data.requests || []).find((r) => r.n === iteration);
        body.textContent = sent ? JSON.stringify(sent.request, null, 2) : "the server kept no request for this iteration (a scripted reply is never sent; a durable run's calls go through its workflow)";
      } catch (error) {
        delete box.dataset.loaded;
        body.textContent = `could not read the request: ${error.message}`;
      }
    });
    item.append(box);
    return item;
  }

  // One key of the state as a step changed it: `- key: before`, `+ key: after`, or both.
  function stateChange(change) {
    const item = el("li", "state-change");
    item.dataset.key = change.key;
    item.dataset.op = change.op;
    item.append(el("span", "key", `state.${change.key}`));
    if (change.op !== "add") item.append(el("del", null, JSON.stringify(change.before)));
    if (change.op !== "remove") item.append(el("ins", null, JSON.stringify(change.after)));
    return item;
  }

  function goLive() {
    const frames = state.timeline.frames;
    state.timeline.at = null;
    $("timeline-detail").replaceChildren();
    if (frames.length) {
      const last = frames[frames.length - 1];
      const running = Object.keys(last.statuses).filter((id) => last.statuses[id] === "RUNNING");
      state.tree?.setStatuses(last.statuses, [...last.changes.map((c) => c.id), ...running]);
    }
    drawTimeline();
  }

  // ------------------------------------------------------------------ a run's events
  function newRunView(question) {
    $("empty")?.remove();
    const article = el("article", "run");
    const steps = el("div", "steps");
    const answer = el("div", "answer");
    article.append(el("p", "question", question), steps, answer);
    $("transcript").append(article);
    state.view = { article, steps, answer, cards: new Map(), thinking: null };
    return state.view;
  }

  function note(view, text, className) {
    view.steps.append(el("p", "note" + (className ? " " + className : ""), text));
  }

  function toolCard(view, data) {
    const key = data.call_id || `${data.iteration}:${data.tool_name}`;
    let card = view.cards.get(key);
    if (!card) {
      card = el("div", "tool-card");
      card.dataset.tool = data.tool_name || "";
      card.dataset.state = "running";
      const head = el("div", "head");
      head.append(el("span", "tool-name", data.tool_name), el("span", "badge state", "running"), el("span", "time"));
      card.append(head, el("div", "label", "arguments"), el("pre", "args", pretty(data.tool_args)));
      view.cards.set(key, card);
      view.steps.append(card);
    }
    return card;
  }

  function finishToolCard(view, data) {
    const card = toolCard(view, data);
    const failed = data.error !== null && data.error !== undefined;
    card.dataset.state = failed ? "error" : "done";
    card.querySelector(".state").textContent = data.denied ? "denied" : failed ? "error" : "done";
    card.querySelector(".state").dataset.status = failed ? "error" : "success";
    if (typeof data.iter_elapsed === "number") card.querySelector(".time").textContent = `${data.iter_elapsed.toFixed(2)} s`;
    if (failed) {
      card.append(el("div", "label", "error"), el("pre", "error-text", pretty(data.error)));
    } else {
      card.append(el("div", "label", "observation"), el("pre", "observation", pretty(data.observation)));
    }
  }

  // A running call's progress reports (one line, replaced) and its MCP server's log lines.
  function toolNote(card, data) {
    if (data.status === "progress") {
      let line = card.querySelector(".progress");
      if (!line) {
        line = el("div", "progress");
        card.querySelector(".head").after(line);
      }
      const total = typeof data.total === "number" ? ` / ${data.total}` : "";
      line.textContent = `progress ${data.progress}${total}` + (data.message ? `: ${data.message}` : "");
      return;
    }
    let log = card.querySelector(".server-log");
    if (!log) {
      card.append(el("div", "label", "server log"));
      log = el("pre", "server-log");
      card.append(log);
    }
    const text = typeof data.data === "string" ? data.data : JSON.stringify(data.data);
    log.textContent += `${data.level}${data.logger ? " " + data.logger : ""}: ${text}\n`;
  }

  function onStep(view, data) {
    if (data.type === "thinking" && data.status === "start") {
      view.thinking = el("p", "note thinking spinning", `iteration ${data.iteration}: thinking…`);
      view.reasoning = null;
      view.steps.append(view.thinking);
    } else if (data.type === "thinking" && data.status === "done") {
      // `reasoning_content`: the model's own reasoning (a reasoning model's, streamed before on
      // the `reasoning` channel); `reasoning`: the thought beside its tool calls, else that
      // reasoning. The "thought" label stays only when there is one or the other.
      const text = (value) => (typeof value === "string" && value.trim() ? value : "");
      const reasoning = text(data.reasoning_content);
      const thought = text(data.reasoning);
      if (reasoning) reasoningBox(view).textContent = reasoning;
      else if (view.reasoning && !view.reasoning.textContent.trim()) view.reasoning.closest("details").remove();
      if (thought && thought !== reasoning) {
        const details = el("details", "note thought");
        details.open = true;
        details.append(el("summary", null, "thought"), el("pre", null, thought));
        if (view.thinking) view.thinking.after(details);
        else view.steps.append(details);
      }
      if (view.thinking && (thought || reasoning)) view.thinking.textContent = `iteration ${data.iteration}: thought`;
      else view.thinking?.remove();
      view.thinking?.classList.remove("spinning");
      view.thinking = null;
      view.reasoning = null;
    } else if (data.type === "iteration" && data.status === "start") {
      toolCard(view, data);
    } else if (data.type === "iteration" && data.status === "done") {
      finishToolCard(view, data);
    } else if (data.type === "iteration" && (data.status === "progress" || data.status === "log")) {
      toolNote(toolCard(view, data), data);
    }
  }

  function reasoningBox(view) {
    if (!view.reasoning) {
      const details = el("details", "note reasoning");
      details.open = true;
      view.reasoning = el("pre");
      details.append(el("summary", null, "reasoning"), view.reasoning);
      if (view.thinking) view.thinking.after(details);
      else view.steps.append(details);
    }
    return view.reasoning;
  }

  // A reasoning model's reasoning as it streams (`reasoning` channel: deltas, and a reset when
  // an attempt cut off is retried); the step's `done` then carries it whole.
  function onReasoning(view, data) {
    if (data.status === "reset") reasoningBox(view).textContent = "";
    else if (data.status === "delta") reasoningBox(view).textContent += data.content || "";
  }

  function onAnswer(view, data) {
    const answer = view.answer;
    if (data.status === "start" || data.status === "reset") {
      answer.textContent = "";
      answer.classList.toggle("streaming", data.status === "start");
    } else if (data.status === "delta") {
      answer.classList.add("streaming");
      answer.dataset.deltas = String(Number(answer.dataset.deltas || 0) + 1);
      answer.append(data.content);
    } else if (data.status === "done") {
      if (typeof data.html === "string") showHtml(answer, data.html);
      else answer.textContent = data.content;
      answer.classList.remove("streaming");
    }
  }

  function drawApprovals(items) {
    const list = $("approval-list");
    list.replaceChildren();
    for (const item of items) {
      if (item.decided) continue;
      if (item.kind === "breakpoint") {
        drawPause(item, list);
        continue;
      }
      const box = el("div", "approval");
      box.dataset.approvalId = item.id;
      // The arguments are editable: Approve sends the corrected ones when they were changed
      // (the server checks them against the tool's schema and the guard checks them again).
      const args = el("textarea", "arguments");
      args.textContent = pretty(item.arguments); // its default value: the model's arguments
      args.rows = Math.min(12, args.value.split("\n").length + 1);
      args.spellcheck = false;
      args.setAttribute("aria-label", `arguments of ${item.tool}`);
      box.append(el("div", null, `${item.tool} (${item.id})` + (item.reason ? ` — ${item.reason}` : "")), args);
      const buttons = el("div", "buttons");
      buttons.append(denyReason());
      const approve = el("button", "approve", "Approve");
      const deny = el("button", "deny", "Deny");
      approve.type = deny.type = "button";
      approve.addEventListener("click", () => decide(item, "approve", box));
      deny.addEventListener("click", () => decide(item, "deny", box));
      buttons.append(approve, deny);
      box.append(buttons);
      list.append(box);
    }
    $("approvals").hidden = list.children.length === 0;
  }

  // A decision on a thread an earlier server left paused in the store resumes it as a new run:
  // follow that run here.
  function followResumed(item, answer) {
    if (item.run_id || !answer.run_id) return;
    state.threadId = item.thread_id;
    rememberThread(item.thread_id);
    $("thread").textContent = `conversation ${item.thread_id}`;
    watch(answer.run_id, "");
  }

  // An approval is named by its id (the tool call's, as `jianmu-like approvals` shows it) within
  // its conversation.
  async function decide(item, decision, box) {
    const body = { decision, thread_id: item.thread_id };
    const edited = box.querySelector("textarea.arguments").value;
    if (decision === "approve" && edited !== pretty(item.arguments)) {
      try {
        body.arguments = JSON.parse(edited);
      } catch (error) {
        showError(`the arguments are not JSON: ${error.message}`);
        return;
      }
    }
    for (const button of box.querySelectorAll("button")) button.disabled = true;
    try {
      const reason = box.querySelector("input.deny-reason");
      if (decision === "deny" && reason && reason.value.trim()) body.reason = reason.value.trim();
      followResumed(item, await api("POST", `/api/approvals/${encodeURIComponent(item.id)}`, body));
      box.remove();
      $("approvals").hidden = $("approval-list").children.length === 0;
    } catch (error) {
      for (const button of box.querySelectorAll("button")) button.disabled = false;
      showError(`could not ${decision}: ${error.message}`);
    }
  }

  // ------------------------------------------------------------------ artifacts
  // A document a tool made: fetched (with the token) from the server, then HTML in an iframe
  // sandboxed without allow-same-origin or scripts (nothing in it reaches the console), images
  // as images, text as text; each downloadable.
  async function artifactPanel(view, data) {
    const index = (view.artifacts = (view.artifacts || 0) + 1) - 1;
    const artifact = data.artifact || {};
    const name = artifact.name || `artifact ${index}`;
    const type = (artifact.mime_type || "application/octet-stream").split(";")[0].trim().toLowerCase();
    const panel = el("div", "artifact");
    panel.dataset.name = name;
    panel.append(el("div", "head", `${name} (${type}) from ${data.tool}`));
    view.steps.append(panel);
    try {
      const path = `/api/runs/${encodeURIComponent(view.runId)}/artifacts/${index}`;
      const response = await fetch(path, { headers: headers() });
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        throw new Error(body.error || `${response.status} ${response.statusText}`);
      }
      const blob = await response.blob();
      if (type === "text/html") {
        const frame = el("iframe", "artifact-frame");
        frame.setAttribute("sandbox", "");
        frame.title = name;
        frame.srcdoc = await blob.text();
        panel.append(frame);
      } else if (type.startsWith("image/")) {
        const image = el("img", "artifact-image");
        image.alt = name;
        image.src = URL.createObjectURL(blob);
        panel.append(image);
      } else if (type.startsWith("text/") || type === "application/json") {
        panel.append(el("pre", "artifact-text", await blob.text()));
      }
      const link = el("a", "download", `Download ${name}`);
      link.href = URL.createObjectURL(blob);
      link.download = name;
      panel.append(link);
    } catch (error) {
      panel.append(el("p", "error", `could not load ${name}: ${error.message}`));
    }
  }

  // Deny with a reason: it reaches the model as the refused call's observation.
  function denyReason() {
    const input = el("input", "deny-reason");
    input.type = "text";
    input.placeholder = "Reason (sent with Deny)";
    input.setAttribute("aria-label", "reason for denying");
    return input;
  }

  // Stop: the server halts the run (no further model or tool call); its `done` says cancelled.
  async function stopRun() {
    if (!state.running || !state.runId) return;
    $("stop").disabled = true;
    const badge = $("run-status");
    const before = [badge.dataset.status, badge.textContent];
    setStatus("cancelling", "stopping…"); // before the request: its `done` may come first
    try {
      await api("POST", `/api/runs/${encodeURIComponent(state.runId)}/cancel`, {});
    } catch (error) {
      if (state.running) setStatus(...before); // e.g. waiting for approval: deny instead
      $("stop").disabled = !state.running;
      showError(`could not stop the run: ${error.message}`);
    }
  }

  // A run left waiting for approval (e.g. before this page was reloaded): show it again, from
  // its first event (the server replays a run's stream to a late client).
  async function loadApprovals() {
    try {
      const { approvals } = await api("GET", "/api/approvals");
      if (state.running || approvals.length === 0) return;
      const held = approvals.find((item) => item.run_id);
      if (!held) {
        // Paused in the store by an earlier server: decided here, its thread resumes as a new run.
        drawApprovals(approvals);
        return;
      }
      const run = await api("GET", `/api/runs/${encodeURIComponent(held.run_id)}`);
      if (state.running) return;
      state.threadId = run.thread_id;
      rememberThread(run.thread_id);
      $("thread").textContent = `conversation ${run.thread_id}`;
      watch(run.run_id, run.input);
    } catch (_error) {
      // loadTree() reports an unreachable or protected server already
    }
  }

  function onApproval(view, data) {
    if (data.status === "requested") return; // a call starts to wait: drawn when the run suspends
    if (data.status === "pending") {
      const pauses = (data.approvals || []).filter((item) => item.kind === "breakpoint");
      setStatus("suspended", pauses.length && pauses.length === data.approvals.length ? "paused at a breakpoint" : "waiting for approval");
      drawApprovals(data.approvals || []);
      for (const item of data.approvals || []) {
        const paused = item.kind === "breakpoint";
        note(view, paused ? `paused before ${item.tool.split("/").pop()} (breakpoint)` : `${item.tool} waits for approval`, "inject");
      }
      scrollDown();
    } else {
      setStatus("running");
      for (const item of data.approvals || []) {
        // decided here, or elsewhere (`jianmu-like approvals`): its buttons go either way
        for (const box of $("approval-list").querySelectorAll(".approval")) {
          if (box.dataset.approvalId === item.id) box.remove();
        }
        const by = item.decided_by === "store" ? " (by an operator)" : "";
        const edits = item.decision_arguments ? ` with arguments ${JSON.stringify(item.decision_arguments)}` : "";
        const why = item.decision_reason ? `: ${item.decision_reason}` : "";
        note(view, `${item.tool}: ${item.decision === "approve" ? "approved" : "denied"}${edits}${by}${why}`, "inject");
      }
      $("approvals").hidden = $("approval-list").children.length === 0;
    }
  }

  function usageText(done) {
    const usage = done.usage || {};
    const parts = [
      `${done.iterations} iteration${done.iterations === 1 ? "" : "s"}`,
      `${usage.prompt_tokens ?? 0} prompt + ${usage.completion_tokens ?? 0} completion = ${usage.total_tokens ?? 0} tokens` +
        (usage.estimated ? " (estimated)" : ""),
      `${usage.calls ?? 0} model call${usage.calls === 1 ? "" : "s"}`,
      `${Number(done.elapsed || 0).toFixed(2)} s`,
    ];
    return parts;
  }

  // `done.answer` is the run's final answer (`result.final_answer`): the truth the answer box
  // ends with, whatever the answer channel streamed on the way (null: the run has no answer).
  function onDone(view, data) {
    if (typeof data.answer_html === "string") showHtml(view.answer, data.answer_html);
    else view.answer.textContent = typeof data.answer === "string" ? data.answer : "";
    view.answer.classList.remove("streaming");
    // Nothing spins after the run's end: a model call that failed leaves no "thinking…", a
    // tool that never finished no "running" card.
    for (const spinner of view.steps.querySelectorAll(".thinking.spinning")) {
      spinner.classList.remove("spinning");
      spinner.textContent = spinner.textContent.replace("thinking…", "no reply");
    }
    for (const card of view.cards.values()) {
      if (card.dataset.state !== "running") continue;
      card.dataset.state = "error";
      card.querySelector(".state").textContent = data.status === "cancelled" ? "cancelled" : "unfinished";
    }
    setRunning(false);
    drawApprovals([]);
    if (data.error && view.replay && /replay diverged/.test(data.error)) {
      note(view, `The replay of ${view.replay} diverged from the recording (the agent changed since it was recorded). The timeline's later steps show what the recording's events say.`, "divergence");
    }
    if (data.error) {
      const box = el("div", "run-error");
      box.setAttribute("role", "alert");
      box.append(el("strong", null, data.status === "cancelled" ? "Stopped: " : "Error: "), el("span", null, data.error));
      view.steps.append(box);
    }
    const footer = $("usage");
    footer.replaceChildren(statusBadge(data.status));
    for (const part of usageText(data)) footer.append(el("span", null, part));
    setStatus(data.status);
    scrollDown();
    loadThreads();
    if (state.checkpoints && state.threadId && !state.replaying) loadThreadRecordings(state.threadId);
    if (!$("inspector").hidden) inspect();
  }

  function onEvent(view, event, data) {
    // other parts of the page (elicitation.js: the MCP servers' questions) follow the stream too
    document.dispatchEvent(new CustomEvent("jianmu:event", { detail: { runId: view.runId, name: event, data } }));
    if (event === "step" && data.type === "iteration" && data.status === "start") {
      timelineEvent(data.iteration, `tool ${data.tool_name} called with ${JSON.stringify(data.tool_args ?? {})}`);
    } else if (event === "step" && data.type === "iteration" && data.status === "done") {
      timelineEvent(data.iteration, `tool ${data.tool_name} → ${data.error ? "error: " + data.error : pretty(data.observation)}`);
    } else if (event === "step" && data.type === "thinking" && data.status === "done") {
      timelineEvent(data.iteration, `model replied${data.reasoning ? ": " + data.reasoning : ""}`);
    }
    switch (event) {
      case "step": onStep(view, data); break;
      case "answer": onAnswer(view, data); break;
      case "reasoning": onReasoning(view, data); break;
      case "approval": onApproval(view, data); break;
      case "inject": note(view, `follow-up ${data.status}: ${data.content}`, "inject"); break;
      case "phase": note(view, `phase ${data.phase}${data.status ? " " + data.status : ""}`); break;
      case "artifact": artifactPanel(view, data); break;
      case "compact": note(view, `context compacted: ${data.original_messages} messages, ${data.kept_messages} kept`); break;
      case "done": onDone(view, data); break;
      default: break;
    }
    if (event !== "answer") scrollDown();
  }

  function watch(runId, question) {
    const view = newRunView(question);
    view.runId = runId;
    if (state.streams) state.streams.abort();
    const streams = (state.streams = new AbortController());
    state.runId = runId;
    resetTree();
    $("version").hidden = true;
    setRunning(true);
    $("usage").replaceChildren(statusBadge("running"));
    setStatus("running");
    const fail = (error) => {
      if (streams.signal.aborted) return;
      setRunning(false);
      setStatus("error");
      showError(`lost the run's stream: ${error.message}`);
    };
    follow(`/api/runs/${runId}/events`, (event, data) => onEvent(view, event, data), streams.signal).catch(fail);
    follow(`/api/runs/${runId}/nodes`, (_event, data) => onNodes(data), streams.signal).catch(() => {});
  }

  // ------------------------------------------------------------------ recordings
  // A server started with --recordings DIR opens the recordings of that folder: the server
  // replays one as a run of its own (no model asked, no tool run), whose tree is the agent the
  // recording names; the page draws that tree and follows the replay as a live run, so its
  // timeline scrubs through the recorded run's steps. A replay that diverges (the agent
  // changed) ends saying where; its later steps are what the recording's events say.
  async function loadRecordings() {
    let data;
    try {
      data = await api("GET", "/api/recordings");
    } catch (error) {
      if (!(error instanceof Unauthorized)) showError(`could not list the recordings: ${error.message}`);
      return;
    }
    $("recordings").hidden = !data.folder;
    const list = $("recording-list");
    list.replaceChildren();
    if (data.folder && !data.recordings.length) list.append(el("li", "muted", "no recording in the folder"));
    for (const item of data.recordings) {
      const li = el("li");
      const open = el("button", "small recording", item.name);
      open.type = "button";
      open.dataset.name = item.name;
      open.addEventListener("click", () => openRecording(item.name));
      li.append(open, el("span", "muted", `${Math.ceil(item.bytes / 1024)} KB`));
      list.append(li);
    }
  }

  // `url`: the route that replays it (a folder's file by default; a conversation's kept run,
  // `openThreadRecording`, names its own): the page follows either the same way.
  async function openRecording(name, url = `/api/recordings/${encodeURIComponent(name)}/replay`) {
    if (state.running) {
      showError("a run is under way: wait for it (or stop it) before opening a recording");
      return;
    }
    showError("");
    let opened;
    try {
      opened = await api("POST", url, {});
    } catch (error) {
      if (!(error instanceof Unauthorized)) showError(`could not open ${name}: ${error.message}`);
      return;
    }
    setFork(null);
    $("version").hidden = true;
    state.threadId = null; // a question after it starts a new conversation
    rememberThread(null);
    state.replaying = name;
    $("models").textContent = ""; // the served agent's models, not the replay's (it asks none)
    state.tree = window.JianmuTree.create($("tree"), opened.tree, { onSelect: () => {} });
    watch(opened.run_id, `replay of ${name}`);
    state.view.replay = name;
    $("thread").textContent = `recording ${name}`;
    $("tree-caption").textContent = `replay of ${name}${opened.agent ? ` (agent ${opened.agent})` : ""}`;
  }

  // After a recording, the page draws the served agent's tree again.
  async function leaveRecording() {
    if (!state.replaying) return;
    state.replaying = null;
    await loadTree();
  }

  // ------------------------------------------------------------------ threads and versions
  // With a checkpoint store the server keeps every conversation and every saved version of it:
  // the list of conversations, one conversation's messages (continue it by asking), its
  // versions, the state saved in one (messages, the tree's statuses, pending approvals) and a
  // fork from it (the next question continues that version: POST /api/runs from_checkpoint).
  // A conversation is named by its first question (read from the store; its id stays its title).
  async function nameThreads(heads) {
    await Promise.all(
      heads.map(async (head) => {
        try {
          const view = await api("GET", `/api/threads/${encodeURIComponent(head.thread_id)}`);
          const first = (view.messages || []).find((m) => m.role === "user" && typeof m.content === "string");
          if (!first) return;
          const text = first.content.trim().replace(/\s+/g, " ");
          const button = document.querySelector(`#thread-list .thread-item[data-thread-id="${CSS.escape(head.thread_id)}"] button`);
          if (button) button.textContent = text.length > 60 ? text.slice(0, 59) + "…" : text;
        } catch (_error) {
          // the id stays its name
        }
      }),
    );
  }

  // The open conversation is kept across a reload of the page (this tab only).
  const THREAD_KEY = "jianmu-like-thread";
  function rememberThread(threadId) {
    if (threadId) sessionStorage.setItem(THREAD_KEY, threadId);
    else sessionStorage.removeItem(THREAD_KEY);
  }

  async function loadThreads() {
    const list = $("thread-list");
    if (!state.checkpoints) {
      list.replaceChildren(el("li", "muted", "This server keeps no checkpoint store (serve with --checkpoint) — conversations live only while their runs are kept."));
      return;
    }
    try {
      const { threads } = await api("GET", "/api/threads");
      list.replaceChildren();
      if (threads.length === 0) list.append(el("li", "muted", "no conversation saved yet"));
      for (const head of threads) {
        const item = el("li", "thread-item");
        item.dataset.threadId = head.thread_id;
        const open = el("button", "link", head.thread_id);
        open.type = "button";
        open.title = `conversation ${head.thread_id}`;
        open.addEventListener("click", () => openThread(head.thread_id));
        item.append(open, el("span", "muted", ` ${head.messages} messages · ${STATUS_WORDS[head.status] || head.status}`));
        if (head.thread_id === state.threadId) item.classList.add("current");
        list.append(item);
      }
      nameThreads(threads.slice(0, 30));
    } catch (error) {
      if (!(error instanceof Unauthorized)) list.replaceChildren(el("li", "error", `threads unavailable: ${error.message}`));
    }
  }

  // A tool call as people read it: its name, then its arguments as indented JSON, in either
  // shape the API sends (as saved: {name, arguments}; OpenAI's: {function: {name, arguments}},
  // the arguments a JSON string, shown as sent when it is not JSON).
  function toolCallText(call) {
    const fn = call.function || call;
    let args = fn.arguments ?? {};
    if (typeof args === "string") {
      try {
        args = JSON.parse(args);
      } catch {
        // not JSON: the text the model sent
      }
    }
    return `${fn.name}(${pretty(args)})`;
  }

  // Messages as list items: role, the text (markdown rendered by the server when it sent
  // `html`), then each tool call.
  function messageItems(messages) {
    return messages.map((message) => {
      const item = el("li", "message");
      item.dataset.role = message.role;
      const body = el("div", "content");
      const content = message.content;
      if (typeof message.html === "string") showHtml(body, message.html);
      else body.textContent = typeof content === "string" ? content : pretty(content);
      const calls = (message.tool_calls || []).map((call) => el("pre", "tool-call", toolCallText(call)));
      item.append(el("span", "role", message.role), body, ...calls);
      return item;
    });
  }

  // A past question and its answer (the assistant message: its `html` rendered by the server,
  // as the answer showed when it streamed; its text when there is none, e.g. over the limit).
  function pastRun(question, answer) {
    const article = el("article", "run past");
    const answerBox = el("div", "answer");
    if (answer && typeof answer.html === "string") showHtml(answerBox, answer.html);
    else answerBox.textContent = (answer && answer.content) || "";
    article.append(el("p", "question", question), el("div", "steps"), answerBox);
    return article;
  }

  // A saved conversation in the transcript (its user questions and the answers after them); the
  // next question continues it.
  async function openThread(threadId) {
    if (state.running) return;
    await leaveRecording();
    try {
      const [view, history] = await Promise.all([
        api("GET", `/api/threads/${encodeURIComponent(threadId)}`),
        api("GET", `/api/threads/${encodeURIComponent(threadId)}/history`),
      ]);
      if (state.streams) state.streams.abort();
      state.streams = null;
      state.threadId = threadId;
      rememberThread(threadId);
      state.runId = null;
      setFork(null);
      $("thread").textContent = `conversation ${threadId}`;
      const transcript = $("transcript");
      transcript.replaceChildren();
      let question = null;
      let answer = null;
      for (const message of view.messages) {
        if (message.role === "user") {
          if (question !== null) transcript.append(pastRun(question, answer));
          question = typeof message.content === "string" ? message.content : pretty(message.content);
          answer = null;
        } else if (message.role === "assistant" && typeof message.content === "string" && message.content) {
          answer = message;
        }
      }
      if (question !== null) transcript.append(pastRun(question, answer));
      drawVersions(threadId, history.versions, view.messages || []);
      loadThreadRecordings(threadId);
      closeVersion();
      setStatus(view.thread.status);
      $("usage").replaceChildren(statusBadge(view.thread.status), el("span", null, `${view.versions} saved versions`));
      loadThreads();
    } catch (error) {
      if (!(error instanceof Unauthorized)) showError(`could not open conversation ${threadId}: ${error.message}`);
    }
  }

  // A conversation's runs kept as recordings (`keep_recordings`): each opens as a folder's
  // recording does (`openRecording`: the server replays it, the page follows the replay). One
  // that cannot be replayed (still running, incomplete, truncated) is listed with the reason,
  // without a button; the server refuses it too (409).
  function recordingUnavailable(item) {
    if (item.truncated) return "cut at its size limit: cannot be replayed";
    if (item.status === "running") return "still being written: open it when its run ends";
    if (item.status === "incomplete") return "incomplete (its run stopped mid-way): cannot be replayed";
    return null;
  }

  const RECORDING_WORDS = { success: "answered", failure: "failed", suspended: "waiting for a decision" };

  async function loadThreadRecordings(threadId) {
    const box = $("thread-recordings");
    let data;
    try {
      data = await api("GET", `/api/threads/${encodeURIComponent(threadId)}/recordings`);
    } catch (_error) {
      box.hidden = true; // none kept for it (or no store): nothing to offer
      return;
    }
    if (threadId !== state.threadId) return; // another conversation opened meanwhile
    const list = $("thread-recording-list");
    list.replaceChildren();
    for (const item of data.recordings) {
      const li = el("li", "thread-recording");
      li.dataset.runId = item.run_id;
      const when = new Date(item.started_at * 1000).toLocaleString();
      const why = recordingUnavailable(item);
      const words = [why || RECORDING_WORDS[item.status] || item.status, `${Math.ceil(item.size / 1024)} KB`];
      if (why) {
        li.classList.add("unavailable");
        li.append(el("span", "when", `run ${item.number} · ${when}`));
      } else {
        const open = el("button", "small recording", `run ${item.number} · ${when}`);
        open.type = "button";
        open.title = `replay run ${item.run_id} (no model, no tool) with the tree and its timeline`;
        open.addEventListener("click", () =>
          openRecording(
            `run ${item.run_id} of ${threadId}`,
            `/api/threads/${encodeURIComponent(threadId)}/recordings/${encodeURIComponent(item.run_id)}/replay`,
          ),
        );
        li.append(open);
      }
      li.append(el("span", "muted", words.join(" · ")));
      list.append(li);
    }
    $("thread-recordings-title").textContent = `Recorded runs of ${threadId}`;
    box.hidden = data.recordings.length === 0;
  }

  // Versions in plain words, grouped per turn (the question each one belongs to: the last user
  // message among its first `messages`, read from the conversation's messages).
  function versionWords(info) {
    const where = info.node ? info.node.split("/").pop() : "";
    const waits = info.pending_approvals.length;
    if (info.status === "success") return "answered";
    if (info.status === "failure") return "failed";
    if (info.status === "suspended")
      return waits ? `waiting for a decision on ${waits === 1 ? "one call" : `${waits} calls`} (${info.pending_approvals.join(", ")})` : "waiting";
    if (info.status === "running") return where ? `working, at ${where}` : "working";
    return STATUS_WORDS[info.status] || info.status;
  }

  function drawVersions(threadId, versions, messages = []) {
    const list = $("version-list");
    list.replaceChildren();
    let turn = null;
    for (const info of versions) {
      const asked = messages.slice(0, info.messages).filter((m) => m.role === "user");
      const question = asked.length ? String(asked[asked.length - 1].content ?? "") : "";
      const key = `${asked.length}:${question}`;
      if (key !== turn) {
        turn = key;
        const head = el("li", "turn", asked.length ? `Turn ${asked.length}: ${question.length > 50 ? question.slice(0, 49) + "…" : question}` : "Before the first question");
        list.append(head);
      }
      const item = el("li", "version");
      item.dataset.seq = String(info.seq);
      const open = el("button", "link", `v${info.seq}`);
      open.type = "button";
      open.addEventListener("click", () => showVersion(threadId, info.seq));
      const fork = info.parent_seq !== null && info.parent_seq !== info.seq - 1 ? ` · fork of v${info.parent_seq}` : "";
      const count = `${info.messages} message${info.messages === 1 ? "" : "s"}`;
      item.append(open, el("span", "muted", ` ${versionWords(info)} · ${count}${fork}`));
      list.append(item);
    }
    $("versions").hidden = false;
    $("versions-title").textContent = `Versions of ${threadId}`;
  }

  // One saved version: its messages, pending approvals and (on the tree) its node statuses.
  async function showVersion(threadId, seq) {
    try {
      const saved = await api("GET", `/api/threads/${encodeURIComponent(threadId)}/checkpoints/${seq}`);
      const box = $("version");
      box.dataset.seq = String(seq);
      $("version-title").textContent = `${threadId} · v${seq} · ${STATUS_WORDS[saved.version.status] || saved.version.status}`;
      $("version-messages").replaceChildren(...messageItems(saved.messages));
      const pending = $("version-pending");
      pending.replaceChildren();
      for (const item of saved.pending_approvals) {
        pending.append(el("li", null, `${item.tool || item.name || "tool"} (${item.id}) ${JSON.stringify(item.arguments ?? {})}`));
      }
      $("version-pending-title").hidden = saved.pending_approvals.length === 0;
      resetTree();
      const statuses = {};
      for (const node of saved.nodes) if (node.id) statuses[node.id] = node.status;
      state.tree?.setStatuses(statuses, Object.keys(statuses).filter((id) => statuses[id] === "RUNNING"));
      $("tree-caption").textContent = `statuses of ${threadId} v${seq}`;
      $("fork").onclick = () => setFork({ threadId, seq });
      box.hidden = false;
    } catch (error) {
      if (!(error instanceof Unauthorized)) showError(`could not read version ${seq} of ${threadId}: ${error.message}`);
    }
  }

  function closeVersion() {
    $("version").hidden = true;
    resetTree();
  }

  // Forking: the next question continues the saved version (the versions after it stay).
  function setFork(fork) {
    state.fork = fork;
    $("fork-note").hidden = !fork;
    $("fork-text").textContent = fork ? `Your next question forks ${fork.threadId} from version ${fork.seq}.` : "";
    if (fork) {
      $("question").focus();
      $("thread").textContent = `conversation ${fork.threadId} (fork of v${fork.seq})`;
    }
  }

  // The current run's state: its summary (status, usage, pending approvals) and, once it has
  // finished or waits, the conversation's messages.
  async function inspect() {
    const box = $("inspector");
    box.hidden = false;
    const body = $("inspector-body");
    if (!state.runId) {
      body.replaceChildren(el("p", "muted", "no run yet"));
      return;
    }
    try {
      const run = await api("GET", `/api/runs/${encodeURIComponent(state.runId)}`);
      const parts = [
        el("div", null, `run ${run.run_id} · conversation ${run.thread_id} · ${STATUS_WORDS[run.status] || run.status} · ${run.iterations} iterations`),
      ];
      if (run.pending_approvals.length) {
        parts.push(el("div", "label", "pending approvals"), el("pre", null, pretty(run.pending_approvals)));
      }
      if (run.usage) parts.push(el("div", "label", "usage"), el("pre", null, pretty(run.usage)));
      if (run.status !== "running") {
        const { messages } = await api("GET", `/api/runs/${encodeURIComponent(run.run_id)}/messages`);
        const list = el("ol", "messages");
        list.append(...messageItems(messages));
        parts.push(el("div", "label", `messages (${messages.length})`), list);
      } else {
        parts.push(el("p", "muted", "the messages are read when the run finishes or waits for approval"));
      }
      body.replaceChildren(...parts);
    } catch (error) {
      if (!(error instanceof Unauthorized)) body.replaceChildren(el("p", "error", error.message));
    }
  }

  // ------------------------------------------------------------------ the forms
  async function ask(event) {
    event.preventDefault();
    const question = $("question").value.trim();
    if (!question || state.running) return;
    showError("");
    $("ask").disabled = true;
    try {
      await leaveRecording();
      const body = { input: question };
      if (state.threadId) body.thread_id = state.threadId;
      if (state.fork) Object.assign(body, { thread_id: state.fork.threadId, from_checkpoint: state.fork.seq });
      const run = await api("POST", "/api/runs", body);
      setFork(null);
      state.threadId = run.thread_id;
      rememberThread(run.thread_id);
      $("thread").textContent = `conversation ${run.thread_id}`;
      $("question").value = "";
      watch(run.run_id, question);
    } catch (error) {
      $("ask").disabled = false;
      showError(error.message);
    }
  }

  async function sendFollowup(event) {
    event.preventDefault();
    const content = $("followup").value.trim();
    if (!content || !state.runId) return;
    try {
      await api("POST", `/api/runs/${state.runId}/inject`, { content });
      $("followup").value = "";
    } catch (error) {
      showError(`follow-up not sent: ${error.message}`);
    }
  }

  function newConversation() {
    if (state.streams) state.streams.abort();
    leaveRecording();
    state.streams = null;
    state.threadId = state.runId = null;
    rememberThread(null);
    setRunning(false);
    setStatus("idle");
    resetTree();
    setFork(null);
    drawApprovals([]);
    $("inspector").hidden = true;
    $("thread-recordings").hidden = true;
    $("thread").textContent = "";
    $("transcript").replaceChildren(el("p", "muted", "New conversation."));
    $("usage").replaceChildren(el("span", "muted", "no run yet"));
  }

  function useToken(event) {
    event.preventDefault();
    const token = $("token-input").value.trim();
    if (!token) return;
    sessionStorage.setItem(TOKEN_KEY, token);
    state.token = token;
    $("token-input").value = "";
    $("token-panel").hidden = true;
    showError("");
    connect();
  }

  async function connect() {
    await loadTree();
    await loadApprovals();
    await loadThreads();
    await loadRecordings();
    const kept = sessionStorage.getItem(THREAD_KEY);
    if (kept && state.checkpoints && !state.threadId && !state.running) await openThread(kept);
  }

  function start() {
    readToken();
    $("ask-form").addEventListener("submit", ask);
    $("inject-form").addEventListener("submit", sendFollowup);
    $("token-form").addEventListener("submit", useToken);
    $("break-tool-form").addEventListener("submit", addToolBreakpoint);
    $("timeline-range").addEventListener("input", () => showFrame(Number($("timeline-range").value)));
    $("timeline-back").addEventListener("click", () => showFrame((state.timeline.at ?? state.timeline.frames.length - 1) - 1));
    $("timeline-next").addEventListener("click", () => showFrame((state.timeline.at ?? state.timeline.frames.length - 1) + 1));
    $("timeline-live").addEventListener("click", goLive);
    $("new-thread").addEventListener("click", newConversation);
    $("stop").addEventListener("click", stopRun);
    $("refresh-threads").addEventListener("click", loadThreads);
    $("refresh-recordings").addEventListener("click", loadRecordings);
    $("inspect").addEventListener("click", inspect);
    $("cancel-fork").addEventListener("click", () => setFork(null));
    $("close-version").addEventListener("click", closeVersion);
    window.addEventListener("hashchange", () => {
      if (!/(?:^#|&)token=/.test(location.hash)) return;
      readToken();
      $("token-panel").hidden = true;
      connect();
    });
    $("question").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        $("ask-form").requestSubmit();
      }
    });
    setRunning(false);
    connect();
  }

  start();
})();

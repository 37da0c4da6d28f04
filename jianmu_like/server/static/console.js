// The jianmu-like console: asks questions through the server's /api/ routes and renders a run's
// Server-Sent Events (tool-call cards, the streamed answer, approvals, usage) and its tree's node
// statuses. Plain JavaScript, no dependencies. Streams are read with fetch(), not EventSource,
// because EventSource cannot send the bearer token of a protected server. Every piece of server
// data reaches the page through textContent, never as HTML.
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
    nodes: new Map(), // node id -> .node element of the tree view
    view: null, // elements of the current run
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

  function setStatus(status, label) {
    const badge = $("run-status");
    badge.dataset.status = status;
    badge.textContent = label || status;
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
  function drawTree(node) {
    const item = el("li");
    const row = el("div", "node");
    row.dataset.id = node.id;
    row.dataset.status = node.status;
    row.title = `${node.type} · ${node.status}` + (node.namespace ? ` · namespace ${node.namespace}` : "");
    row.append(el("span", "dot"), el("span", "name", node.name), el("span", "type", node.type));
    state.nodes.set(node.id, row);
    item.append(row);
    if (node.children.length) {
      const list = el("ul");
      for (const child of node.children) list.append(drawTree(child));
      item.append(list);
    }
    return item;
  }

  async function loadTree() {
    try {
      const { tree } = await api("GET", "/api/agent");
      state.nodes.clear();
      const list = el("ul");
      list.append(drawTree(tree));
      $("tree").replaceChildren(list);
    } catch (error) {
      $("tree").replaceChildren(el("p", "muted", `tree unavailable: ${error.message}`));
    }
  }

  function onNodes(data) {
    for (const change of data.changes || []) {
      const row = state.nodes.get(change.id);
      if (!row) continue; // a node added while running (not in the drawn structure)
      row.dataset.status = change.status;
      row.title = row.title.replace(/ · [A-Z]+/, ` · ${change.status}`);
    }
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

  function onStep(view, data) {
    if (data.type === "thinking" && data.status === "start") {
      view.thinking = el("p", "note thinking", `iteration ${data.iteration}: thinking…`);
      view.steps.append(view.thinking);
    } else if (data.type === "thinking" && data.status === "done") {
      if (view.thinking) view.thinking.textContent = `iteration ${data.iteration}: thought`;
      if (data.reasoning) {
        const details = el("details", "note reasoning");
        details.append(el("summary", null, "reasoning"), el("pre", null, data.reasoning));
        view.steps.append(details);
      }
    } else if (data.type === "iteration" && data.status === "start") {
      toolCard(view, data);
    } else if (data.type === "iteration" && data.status === "done") {
      finishToolCard(view, data);
    }
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
      answer.textContent = data.content;
      answer.classList.remove("streaming");
    }
  }

  function drawApprovals(items) {
    const list = $("approval-list");
    list.replaceChildren();
    for (const item of items) {
      if (item.decided) continue;
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
      await api("POST", `/api/approvals/${encodeURIComponent(item.id)}`, body);
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
      const run = await api("GET", `/api/runs/${encodeURIComponent(approvals[0].run_id)}`);
      if (state.running) return;
      state.threadId = run.thread_id;
      $("thread").textContent = `conversation ${run.thread_id}`;
      watch(run.run_id, run.input);
    } catch (_error) {
      // loadTree() reports an unreachable or protected server already
    }
  }

  function onApproval(view, data) {
    if (data.status === "pending") {
      setStatus("suspended", "waiting for approval");
      drawApprovals(data.approvals || []);
      for (const item of data.approvals || []) note(view, `${item.tool} waits for approval`, "inject");
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
    view.answer.textContent = typeof data.answer === "string" ? data.answer : "";
    view.answer.classList.remove("streaming");
    setRunning(false);
    setStatus(data.status);
    drawApprovals([]);
    if (data.error) note(view, `error: ${data.error}`, "error");
    const footer = $("usage");
    footer.replaceChildren(el("span", "badge", data.status));
    footer.firstChild.dataset.status = data.status;
    for (const part of usageText(data)) footer.append(el("span", null, part));
    scrollDown();
  }

  function onEvent(view, event, data) {
    // other parts of the page (elicitation.js: the MCP servers' questions) follow the stream too
    document.dispatchEvent(new CustomEvent("jianmu:event", { detail: { runId: view.runId, name: event, data } }));
    switch (event) {
      case "step": onStep(view, data); break;
      case "answer": onAnswer(view, data); break;
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
    setRunning(true);
    setStatus("running");
    $("usage").replaceChildren(el("span", "muted", "running…"));
    const fail = (error) => {
      if (streams.signal.aborted) return;
      setRunning(false);
      setStatus("error");
      showError(`lost the run's stream: ${error.message}`);
    };
    follow(`/api/runs/${runId}/events`, (event, data) => onEvent(view, event, data), streams.signal).catch(fail);
    follow(`/api/runs/${runId}/nodes`, (_event, data) => onNodes(data), streams.signal).catch(() => {});
  }

  // ------------------------------------------------------------------ the forms
  async function ask(event) {
    event.preventDefault();
    const question = $("question").value.trim();
    if (!question || state.running) return;
    showError("");
    $("ask").disabled = true;
    try {
      const body = { input: question };
      if (state.threadId) body.thread_id = state.threadId;
      const run = await api("POST", "/api/runs", body);
      state.threadId = run.thread_id;
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
    state.streams = null;
    state.threadId = state.runId = null;
    setRunning(false);
    setStatus("idle");
    drawApprovals([]);
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

  function connect() {
    loadTree();
    loadApprovals();
  }

  function start() {
    readToken();
    $("ask-form").addEventListener("submit", ask);
    $("inject-form").addEventListener("submit", sendFollowup);
    $("token-form").addEventListener("submit", useToken);
    $("new-thread").addEventListener("click", newConversation);
    $("stop").addEventListener("click", stopRun);
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

// The console's answer form for the questions MCP servers ask a person mid-call (elicitations,
// and sampling requests of a `sampling: ask` server). console.js hands it every message of the
// run's stream (a `jianmu:event` DOM event); on the `approval` channel, questions arrive as
// {status: "elicitation"} and leave as {status: "elicitation_resolved"}. The form is built from
// the question's requested schema (a flat object of strings, numbers, integers, booleans and
// enums); the server checks the answer against that schema (422: shown here, the form stays).
// Kept in its own file: it shares nothing with console.js but the page and the token.
"use strict";

(() => {
  const TOKEN_KEY = "jianmu-like-token";
  const $ = (id) => document.getElementById(id);

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  async function post(path, body) {
    const headers = { "Content-Type": "application/json" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = "Bearer " + token;
    const response = await fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(data.error || `${response.status} ${response.statusText}`);
    return data;
  }

  function refreshSection() {
    $("elicitations").hidden = $("elicitation-list").children.length === 0;
  }

  // One input per property of the schema; its value read back by `read()`.
  function field(name, spec, required) {
    const id = `elicit-${Math.random().toString(36).slice(2)}`;
    const row = el("div", "elicit-field");
    const label = el("label", null, (spec.title || name) + (required ? " *" : ""));
    label.htmlFor = id;
    let input;
    const many = spec.type === "array";
    const options = many ? spec.items || {} : spec;
    // enum (with enumNames, legacy), or oneOf / anyOf of {const, title}
    const titled = options.oneOf || options.anyOf || [];
    const choices = options.enum || titled.map((o) => o.const);
    const titles = options.enumNames || titled.map((o) => o.title);
    if (choices.length) {
      input = el("select");
      input.multiple = many;
      if (!required && !many) input.append(el("option", null, ""));
      const chosen = new Set([].concat(spec.default === undefined ? [] : spec.default).map(String));
      choices.forEach((value, i) => {
        const option = el("option", null, titles[i] || value);
        option.value = String(value);
        option.selected = chosen.has(String(value));
        input.append(option);
      });
    } else if (spec.type === "boolean") {
      input = el("input");
      input.type = "checkbox";
      input.checked = spec.default === true;
    } else {
      input = el("input");
      const numeric = spec.type === "number" || spec.type === "integer";
      input.type = numeric ? "number" : { email: "email", uri: "url", date: "date" }[spec.format] || "text";
      if (numeric) input.step = spec.type === "integer" ? "1" : "any";
      if (spec.minimum !== undefined) input.min = String(spec.minimum);
      if (spec.maximum !== undefined) input.max = String(spec.maximum);
      if (spec.default !== undefined) input.value = String(spec.default);
    }
    input.required = required && spec.type !== "boolean";
    input.id = id;
    input.name = name;
    row.append(label, input);
    if (spec.description) row.append(el("span", "muted", spec.description));
    const read = () => {
      if (spec.type === "boolean") return input.checked;
      if (many) {
        const picked = Array.from(input.selectedOptions, (option) => option.value);
        return picked.length ? picked : undefined;
      }
      if (input.value === "") return undefined;
      if (spec.type === "number") return Number(input.value);
      if (spec.type === "integer") return Number.parseInt(input.value, 10);
      return input.value;
    };
    return { row, read };
  }

  // Only http: and https: URLs become links (javascript:, data:, file:... never do).
  function webUrl(text) {
    try {
      const url = new URL(String(text));
      return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
    } catch {
      return null;
    }
  }

  function show(runId, item) {
    if (!item || document.querySelector(`.elicitation[data-id="${CSS.escape(item.id)}"]`)) return;
    const box = el("form", "elicitation");
    box.dataset.id = item.id;
    box.dataset.kind = item.kind || "elicitation";
    box.append(el("div", "elicit-head", `${item.server} asks (${item.id})`), el("p", "elicit-message", item.message));
    const fields = [];
    if (item.kind === "sampling") {
      box.append(el("pre", null, JSON.stringify(item.details || {}, null, 2)));
    } else if (item.url) {
      const href = webUrl(item.url);
      if (href) {
        const link = el("a", null, href);
        link.href = href;
        link.target = "_blank";
        link.rel = "noopener noreferrer";
        box.append(link);
      } else {
        // the server refuses these already: never a link, whatever reaches the page
        box.append(el("code", "unsafe-url", item.url), el("p", "error unsafe-note", "not an http(s) link: not opened"));
      }
    } else {
      const schema = item.requested_schema || {};
      const required = new Set(schema.required || []);
      for (const [name, spec] of Object.entries(schema.properties || {})) {
        const made = field(name, spec || {}, required.has(name));
        fields.push([name, made.read]);
        box.append(made.row);
      }
    }
    const problem = el("p", "error");
    problem.hidden = true;
    const buttons = el("div", "buttons");
    const sampling = item.kind === "sampling";
    const accept = el("button", "approve", sampling ? "Allow" : "Send");
    const decline = el("button", "deny", sampling ? "Refuse" : "Decline");
    const cancel = el("button", null, "Cancel");
    accept.type = "submit";
    decline.type = cancel.type = "button";
    buttons.append(accept, decline, cancel);
    box.append(buttons, problem);
    const answer = async (action) => {
      const body = { action };
      if (action === "accept" && !sampling && !item.url) {
        body.content = {};
        for (const [name, read] of fields) {
          const value = read();
          if (value !== undefined) body.content[name] = value;
        }
      }
      for (const button of box.querySelectorAll("button")) button.disabled = true;
      try {
        await post(`/api/runs/${encodeURIComponent(runId)}/elicitations/${encodeURIComponent(item.id)}`, body);
        box.remove();
        refreshSection();
      } catch (error) {
        for (const button of box.querySelectorAll("button")) button.disabled = false;
        problem.textContent = error.message;
        problem.hidden = false;
      }
    };
    box.addEventListener("submit", (event) => {
      event.preventDefault();
      answer("accept");
    });
    decline.addEventListener("click", () => answer("decline"));
    cancel.addEventListener("click", () => answer("cancel"));
    $("elicitation-list").append(box);
    refreshSection();
  }

  function resolved(data) {
    for (const box of document.querySelectorAll(".elicitation")) {
      if (box.dataset.id === data.id) box.remove();
    }
    refreshSection();
  }

  document.addEventListener("jianmu:event", (event) => {
    const { runId, name, data } = event.detail || {};
    if (!data) return;
    if (name === "done") {
      // the run ended: nothing waits for an answer any more
      $("elicitation-list").replaceChildren();
      refreshSection();
    } else if (name === "approval" && data.status === "elicitation") {
      show(runId, data.elicitation);
    } else if (name === "approval" && data.status === "elicitation_resolved") {
      resolved(data);
    }
  });
})();

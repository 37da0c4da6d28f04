// The console's drawing of a behaviour tree, as Groot2 draws one: top-down, a shape per kind of
// node (sequence →, selector ?, parallel ⇉, decorator hexagon, condition ellipse, action box),
// each node coloured by its status, the path of the latest tick drawn in bold, subtrees folded
// and unfolded by their toggle. The layout is dagre's (vendor/dagre.min.js, MIT, shipped in the
// package: no CDN). One drawing serves a live run, a saved version and a tick of a recording: the
// caller only sets statuses (`apply`, `setStatuses`, `reset`). Nodes are named by their index path
// ("0", "0.1", "0.1.2"), so the ancestors of a node are the prefixes of its id. SVG is built with
// createElementNS and textContent only: a node's name never reaches the page as markup.
"use strict";

window.JianmuTree = (() => {
  const SVG = "http://www.w3.org/2000/svg";
  const GLYPH = { sequence: "→", selector: "?", parallel: "⇉", composite: "⋯", decorator: "◇" };
  const WIDTH = 196;
  const HEIGHT = 44;
  const FOLD_TO = 60; // nodes a big tree shows when first drawn
  const LABEL = 22; // characters of a name drawn; the node's tooltip has all of it

  function svg(tag, attributes, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function cut(text, size) {
    return text.length > size ? text.slice(0, size - 1) + "…" : text;
  }

  function ancestors(id) {
    const parts = id.split(".");
    return parts.map((_, i) => parts.slice(0, i + 1).join("."));
  }

  function shape(kind) {
    const w = WIDTH;
    const h = HEIGHT;
    if (kind === "condition") return svg("ellipse", { class: "shape", cx: w / 2, cy: h / 2, rx: w / 2, ry: h / 2 });
    if (kind === "decorator") {
      const points = [[10, 0], [w - 10, 0], [w, h / 2], [w - 10, h], [10, h], [0, h / 2]];
      return svg("polygon", { class: "shape", points: points.map((p) => p.join(",")).join(" ") });
    }
    const round = kind === "action" ? 3 : 12;
    return svg("rect", { class: "shape", width: w, height: h, rx: round, ry: round });
  }

  // A drawing of `tree` (GET /api/agent's nested JSON) inside `container`.
  function create(container, tree, options = {}) {
    const nodes = new Map(); // id -> {data, children: [ids], status}
    const collapsed = new Set();
    const elements = new Map(); // id -> g.node of the visible nodes
    const edges = new Map(); // child id -> path.edge from its parent
    let path = new Set();
    let marks = new Set(); // nodes with a breakpoint
    let forced = new Map(); // id -> the status a substitution rule forces
    let paused = null; // the node a run is paused before
    let scale = 1;
    let size = { width: 0, height: 0 };

    (function index(node) {
      nodes.set(node.id, { data: node, children: node.children.map((c) => c.id), status: node.status });
      node.children.forEach(index);
    })(tree);
    autoFold();

    // A big tree opens as an overview: the deepest subtrees folded until at most FOLD_TO nodes
    // show (a folded node says how many it hides and the status running inside it).
    function autoFold() {
      const visibleCount = () => {
        let count = 0;
        (function walk(id) {
          count += 1;
          if (!collapsed.has(id)) nodes.get(id).children.forEach(walk);
        })(tree.id);
        return count;
      };
      const candidates = [...nodes.keys()]
        .filter((id) => nodes.get(id).children.length && id !== tree.id)
        .sort((a, b) => b.split(".").length - a.split(".").length);
      for (const id of candidates) {
        if (visibleCount() <= FOLD_TO) break;
        collapsed.add(id);
      }
    }

    const toolbar = document.createElement("div");
    toolbar.className = "tree-tools";
    const canvas = document.createElement("div");
    canvas.className = "tree-canvas";
    const button = (label, title, action) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "small";
      b.textContent = label;
      b.title = title;
      b.dataset.action = title.split(" ")[0];
      b.addEventListener("click", action);
      toolbar.append(b);
    };
    button("−", "zoom out", () => zoom(scale / 1.25));
    button("+", "zoom in", () => zoom(scale * 1.25));
    button("fit", "fit the drawing to the panel", () => zoom(Math.min(1, (canvas.clientWidth - 4) / size.width)));
    button("1:1", "actual size", () => zoom(1));
    button("unfold", "unfold every subtree", () => {
      collapsed.clear();
      render();
    });
    button("⤢", "widen the tree panel", () => document.body.classList.toggle("wide-tree"));
    container.replaceChildren(toolbar, canvas);

    let drawing = null;
    let first = true;

    function hiddenCount(id) {
      let count = 0;
      for (const child of nodes.get(id).children) count += 1 + hiddenCount(child);
      return count;
    }

    function innerStatus(id) {
      // the most telling status below a folded node: RUNNING, else FAILURE, else SUCCESS
      let found = "";
      const visit = (nodeId) => {
        for (const child of nodes.get(nodeId).children) {
          const status = nodes.get(child).status;
          if (status === "RUNNING") found = "RUNNING";
          else if (status === "FAILURE" && found !== "RUNNING") found = "FAILURE";
          else if (status === "SUCCESS" && !found) found = "SUCCESS";
          visit(child);
        }
      };
      visit(id);
      return found;
    }

    function describe(g, id) {
      const node = nodes.get(id);
      const { data } = node;
      g.dataset.status = node.status;
      g.querySelector("title").textContent =
        `${data.name}\n${data.type} · ${node.status}` + (data.namespace ? ` · namespace ${data.namespace}` : "");
      if (collapsed.has(id)) g.dataset.inner = innerStatus(id);
      else delete g.dataset.inner;
      if (path.has(id)) g.dataset.path = "";
      else delete g.dataset.path;
      if (marks.has(id)) g.dataset.breakpoint = "";
      else delete g.dataset.breakpoint;
      if (paused === id) g.dataset.paused = "";
      else delete g.dataset.paused;
      const badge = g.querySelector(".substituted");
      if (forced.has(id)) {
        g.dataset.substituted = forced.get(id);
        badge.querySelector("text").textContent = `⇄ ${forced.get(id)}`;
        badge.querySelector("title").textContent = `substituted: reports ${forced.get(id)} without ticking`;
      } else delete g.dataset.substituted;
    }

    function render() {
      const graph = new dagre.graphlib.Graph();
      graph.setGraph({ rankdir: "TB", nodesep: 14, ranksep: 34, marginx: 8, marginy: 8 });
      graph.setDefaultEdgeLabel(() => ({}));
      const visible = [];
      (function walk(id) {
        visible.push(id);
        graph.setNode(id, { width: WIDTH, height: HEIGHT + (nodes.get(id).children.length ? 14 : 0) });
        if (collapsed.has(id)) return;
        for (const child of nodes.get(id).children) {
          walk(child);
          graph.setEdge(id, child);
        }
      })(tree.id);
      // A tree has no crossings to minimise: the heuristic would only reorder children, whose
      // left-to-right order is what a sequence or selector means.
      dagre.layout(graph, { disableOptimalOrderHeuristic: true });
      size = { width: Math.max(graph.graph().width, WIDTH), height: Math.max(graph.graph().height, HEIGHT) };

      drawing = svg("svg", { class: "tree-drawing", viewBox: `0 0 ${size.width} ${size.height}`, role: "img" });
      drawing.append(svg("title", {}, `the tree: ${nodes.size} nodes`));
      const edgeLayer = svg("g", { class: "edges" });
      const nodeLayer = svg("g", { class: "nodes" });
      drawing.append(edgeLayer, nodeLayer);
      elements.clear();
      edges.clear();
      for (const id of visible) {
        const box = graph.node(id);
        const left = box.x - WIDTH / 2;
        const top = box.y - box.height / 2;
        const { data, children } = nodes.get(id);
        for (const child of collapsed.has(id) ? [] : children) {
          const to = graph.node(child);
          const x1 = box.x;
          const y1 = top + HEIGHT;
          const x2 = to.x;
          const y2 = to.y - to.height / 2;
          const middle = (y1 + y2) / 2;
          const edge = svg("path", {
            class: "edge",
            d: `M${x1},${y1} C${x1},${middle} ${x2},${middle} ${x2},${y2}`,
            "data-from": id,
            "data-to": child,
          });
          edges.set(child, edge);
          edgeLayer.append(edge);
        }
        const g = svg("g", { class: "node", transform: `translate(${left},${top})`, "data-id": id, "data-kind": data.kind || "action" });
        g.append(svg("title"), shape(data.kind || "action"));
        const glyph = GLYPH[data.kind];
        const textLeft = glyph ? 26 : 10;
        if (glyph) g.append(svg("text", { class: "glyph", x: 8, y: 28 }, glyph));
        g.append(svg("text", { class: "name", x: textLeft, y: 19 }, cut(data.name, LABEL)));
        g.append(svg("text", { class: "type", x: textLeft, y: 35 }, cut(data.type, 26)));
        g.append(svg("circle", { class: "dot", cx: WIDTH - 10, cy: 10, r: 4.5 }));
        g.append(svg("circle", { class: "bp", cx: 0, cy: 0, r: 6 }));
        const badge = svg("g", { class: "substituted", transform: `translate(${WIDTH - 86},-7)` });
        badge.append(svg("title"), svg("rect", { width: 70, height: 14, rx: 4, ry: 4 }), svg("text", { x: 35, y: 11 }));
        g.append(badge);
        g.addEventListener("click", (event) => {
          if (event.target.closest(".toggle")) return;
          if (options.onSelect) options.onSelect(id, data);
        });
        if (children.length) {
          const folded = collapsed.has(id);
          const toggle = svg("g", { class: "toggle", transform: `translate(${WIDTH / 2 - 16},${HEIGHT - 1})`, tabindex: 0, role: "button" });
          toggle.append(svg("title", {}, folded ? `unfold ${hiddenCount(id)} nodes` : "fold this subtree"));
          toggle.append(svg("rect", { width: 32, height: 14, rx: 4, ry: 4 }));
          toggle.append(svg("text", { x: 16, y: 11 }, folded ? `+${hiddenCount(id)}` : "−"));
          const flip = () => {
            if (collapsed.has(id)) collapsed.delete(id);
            else collapsed.add(id);
            render();
          };
          toggle.addEventListener("click", flip);
          toggle.addEventListener("keydown", (event) => {
            if (event.key === "Enter" || event.key === " ") {
              event.preventDefault();
              flip();
            }
          });
          g.dataset.folded = folded ? "true" : "false";
          g.append(toggle);
        }
        elements.set(id, g);
        nodeLayer.append(g);
        describe(g, id);
      }
      for (const [child, edge] of edges) edge.classList.toggle("on-path", path.has(child));
      canvas.replaceChildren(drawing);
      zoom(scale);
      if (first) {
        // First sight: the whole tree when it fits at a readable scale, else the root in view.
        first = false;
        const fit = (canvas.clientWidth - 4) / size.width;
        if (fit < 1 && fit >= 0.6) zoom(fit);
        else if (fit < 1) canvas.scrollLeft = graph.node(tree.id).x - canvas.clientWidth / 2;
      }
    }

    function zoom(value) {
      scale = Math.max(0.005, Math.min(2.5, value || 1));
      if (!drawing) return;
      drawing.setAttribute("width", String(Math.round(size.width * scale)));
      drawing.setAttribute("height", String(Math.round(size.height * scale)));
      container.dataset.scale = scale.toFixed(2);
    }

    function refresh() {
      for (const [id, g] of elements) describe(g, id);
      for (const [child, edge] of edges) edge.classList.toggle("on-path", path.has(child));
    }

    function setPath(ids) {
      path = new Set();
      for (const id of ids) if (nodes.has(id)) for (const a of ancestors(id)) path.add(a);
    }

    render();

    return {
      nodes,
      has: (id) => nodes.has(id),
      status: (id) => nodes.get(id)?.status,
      // A batch of the run's `nodes` stream: the statuses it changed, and as the path of this
      // tick the nodes it changed or left running, with their ancestors.
      apply(changes) {
        const touched = [];
        for (const change of changes) {
          const node = nodes.get(change.id);
          if (!node) continue; // a node added while running (not in the drawn structure)
          node.status = change.status;
          touched.push(change.id);
        }
        for (const [id, node] of nodes) if (node.status === "RUNNING") touched.push(id);
        setPath(touched);
        refresh();
      },
      // Statuses of a saved version or of a recording's tick: all of them at once.
      setStatuses(statuses, active = []) {
        for (const [id, node] of nodes) node.status = statuses[id] || "INVALID";
        setPath(active);
        refresh();
      },
      reset() {
        for (const node of nodes.values()) node.status = "INVALID";
        path = new Set();
        refresh();
      },
      // Breakpoints drawn as a red mark at a node's left; the node a run is paused before.
      mark(ids, pausedAt = null) {
        marks = new Set(ids);
        paused = pausedAt;
        if (pausedAt) for (const a of ancestors(pausedAt).slice(0, -1)) collapsed.delete(a);
        render();
      },
      // Substitution rules: a badge on each node forced to a status ({id: "SUCCESS"|"FAILURE"}).
      substitute(statuses) {
        forced = new Map(Object.entries(statuses || {}));
        refresh();
      },
      fold(id, folded = true) {
        if (folded) collapsed.add(id);
        else collapsed.delete(id);
        render();
      },
      zoom,
    };
  }

  return { create };
})();

// rillet web: the Evals view (rillet.web.evals). A header button opens it: the eval reports of
// the --evals folder, a report's cases (a failing one with its steps, the failing step marked),
// two reports compared, and the chat's finished turns to save as eval cases.
(() => {
  "use strict";

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  async function get(url) {
    const r = await fetch(url);
    const data = await r.json();
    if (!r.ok) throw new Error(data.error || r.statusText);
    return data;
  }

  const pct = (x) => (x === null || x === undefined ? "-" : Math.round(x * 100) + "%");

  const dialog = el("dialog");
  dialog.id = "evals-dialog";
  dialog.innerHTML = `
    <form method="dialog" class="dialog-head"><h2>Evals <span id="evals-folder" class="dim"></span></h2><button type="submit">Close</button></form>
    <div class="evals-body">
      <section class="evals-col">
        <h3>Reports <button id="evals-refresh" type="button" class="small">refresh</button></h3>
        <table id="evals-reports" class="evals-table"></table>
        <div class="evals-compare-bar">
          <label>before <select id="evals-before"></select></label>
          <label>after <select id="evals-after"></select></label>
          <button id="evals-compare" type="button" class="small">Compare</button>
        </div>
        <h3>Chat turns <span class="dim">save one as an eval case</span></h3>
        <div id="evals-runs"></div>
      </section>
      <section class="evals-col wide"><div id="evals-detail"><p class="dim">Open a report to see its cases.</p></div></section>
    </div>`;
  document.body.append(dialog);

  const button = el("button", "evals-open", "Evals");
  button.id = "open-evals";
  button.type = "button";
  button.title = "eval reports, comparisons, and saving chat turns as eval cases";
  const header = document.querySelector("header");
  header.insertBefore(button, document.getElementById("new-chat"));
  button.onclick = () => {
    dialog.showModal();
    refresh();
  };
  dialog.querySelector("#evals-refresh").onclick = () => refresh();
  dialog.querySelector("#evals-compare").onclick = () =>
    compare(dialog.querySelector("#evals-before").value, dialog.querySelector("#evals-after").value);

  const detail = dialog.querySelector("#evals-detail");

  async function refresh() {
    const table = dialog.querySelector("#evals-reports");
    table.replaceChildren();
    let data;
    try {
      data = await get("/api/evals");
    } catch (e) {
      table.append(el("caption", "err", String(e.message)));
      return;
    }
    dialog.querySelector("#evals-folder").textContent = data.folder || "(no folder: rillet web --evals DIR)";
    if (!data.reports.length) table.append(el("caption", "dim", "No reports: write them with rillet eval ... -o DIR/NAME.json"));
    for (const r of data.reports) {
      const tr = el("tr", r.passed ? "pass" : "fail");
      tr.dataset.report = r.file;
      tr.append(el("td", "mono", r.file), el("td", "", r.eval_set || ""));
      tr.append(el("td", "result", `${r.cases_passed}/${r.cases} ${r.passed ? "PASS" : "FAIL"}`));
      const open = el("button", "small open", "open");
      open.type = "button";
      open.onclick = () => show(r.file);
      const td = el("td");
      td.append(open);
      tr.append(td);
      table.append(tr);
    }
    for (const [id, pick] of [["#evals-before", 0], ["#evals-after", data.reports.length - 1]]) {
      const select = dialog.querySelector(id);
      select.replaceChildren(...data.reports.map((r) => {
        const o = el("option", "", r.file);
        o.value = r.file;
        return o;
      }));
      if (data.reports.length) select.selectedIndex = Math.max(pick, 0);
    }
    runs();
  }

  function steps(run, failing) {
    const list = el("ol", "evals-steps");
    run.steps.forEach((text, i) => {
      const n = i + 1;
      const li = el("li", failing.has(n) ? "step failing" : "step", text);
      li.dataset.step = String(n);
      list.append(li);
    });
    return list;
  }

  async function show(file) {
    detail.replaceChildren(el("p", "dim", "loading " + file + "..."));
    let report;
    try {
      report = await get("/api/evals/reports/" + encodeURIComponent(file));
    } catch (e) {
      detail.replaceChildren(el("p", "err", String(e.message)));
      return;
    }
    const head = el("h3", "", `${file}: eval set ${report.eval_set}, ${report.cases_passed} of ${report.cases} cases passed`);
    const table = el("table", "evals-table evals-cases");
    table.innerHTML = "<tr><th>case</th><th>runs</th><th>pass rate</th><th>result</th><th>first failure</th></tr>";
    const details = el("div", "evals-failures");
    for (const c of report.results) {
      const passed = c.runs.filter((r) => r.passed).length;
      const run = c.runs.find((r) => !r.passed);
      const first = run ? run.checks.find((k) => !k.passed) : null;
      const tr = el("tr", c.passed ? "pass" : "fail");
      tr.dataset.case = c.id;
      tr.append(el("td", "mono", c.id), el("td", "", `${passed}/${c.runs.length}`), el("td", "", pct(c.pass_rate)));
      tr.append(el("td", "result", c.passed ? "PASS" : "FAIL"));
      tr.append(el("td", "", first ? `turn ${first.turn}, ${first.kind}` + (first.step ? ` (step ${first.step})` : "") : ""));
      table.append(tr);
      if (!run) continue;
      const box = el("div", "evals-case");
      box.dataset.case = c.id;
      box.append(el("h4", "", `${c.id}: ${passed} of ${c.runs.length} runs passed (needs ${pct(c.min_pass_rate)})`));
      const chips = el("div", "evals-run-chips");
      const view = el("div", "run-view");
      const open = (r, chip) => {
        chips.querySelectorAll(".run-chip").forEach((b) => b.classList.toggle("active", b === chip));
        view.replaceChildren();
        const failing = new Set();
        for (const k of r.checks.filter((k) => !k.passed)) {
          view.append(el("p", "evals-why", `turn ${k.turn}, ${k.kind}: ${k.message}`));
          if (k.step) failing.add(k.step);
        }
        view.append(steps(r, failing));
      };
      c.runs.forEach((r, i) => {
        const chip = el("button", "small run-chip " + (r.passed ? "pass" : "fail"), `run ${i + 1} ${r.passed ? "\u2713" : "\u2717"}`);
        chip.type = "button";
        chip.dataset.attempt = String(r.attempt);
        chip.onclick = () => open(r, chip);
        chips.append(chip);
        if (r === run) open(r, chip); // the first failing run, to begin with
      });
      box.append(chips, view);
      details.append(box);
    }
    detail.replaceChildren(head, table, details);
  }

  async function compare(before, after) {
    if (!before || !after) return;
    let data;
    try {
      data = await get(`/api/evals/compare?before=${encodeURIComponent(before)}&after=${encodeURIComponent(after)}`);
    } catch (e) {
      detail.replaceChildren(el("p", "err", String(e.message)));
      return;
    }
    const table = el("table", "evals-table evals-comparison");
    table.innerHTML = "<tr><th>case</th><th>status</th><th>before</th><th>after</th></tr>";
    for (const c of data.changes) {
      const tr = el("tr", "change " + c.status);
      tr.dataset.case = c.id;
      tr.append(el("td", "mono", c.id), el("td", "status", c.status), el("td", "", pct(c.before)), el("td", "", pct(c.after)));
      table.append(tr);
    }
    const regressed = data.changes.filter((c) => c.status === "regressed").length;
    detail.replaceChildren(el("h3", "", `${before} \u2192 ${after}: ${regressed} regressed`), table);
  }

  async function runs() {
    const box = dialog.querySelector("#evals-runs");
    let list;
    try {
      list = await get("/api/evals/runs");
    } catch (e) {
      box.replaceChildren(el("p", "err", String(e.message)));
      return;
    }
    box.replaceChildren();
    if (!list.length) box.append(el("p", "dim", "No finished chat turn yet."));
    for (const r of list) {
      const row = el("div", "evals-run");
      row.dataset.run = r.run;
      row.append(el("div", "q", r.text), el("div", "a dim", r.answer));
      const id = el("input", "case-id");
      id.placeholder = "case id (optional)";
      const save = el("button", "small save-case", "Save as eval case");
      save.type = "button";
      const note = el("div", "note");
      save.onclick = async () => {
        const resp = await fetch("/api/evals/cases", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ run: r.run, case_id: id.value.trim() || undefined }),
        });
        const data = await resp.json();
        note.className = resp.ok ? "note saved" : "note err";
        note.textContent = resp.ok ? `saved as case ${data.case.id} in ${data.file} (${data.cases} cases)` : data.error;
      };
      const controls = el("div", "controls");
      controls.append(id, save);
      row.append(controls, note);
      box.append(row);
    }
  }
})();

// Agora agent dashboard: Protocols, Live, Cost and the routines the LLM wrote. Data from `api/…`, changes pushed
// over `events`; charts drawn with uPlot, served by the agent itself.
'use strict';

(function () {
  const { el, request, feed, setup, status, time, replace, throttle } = window.AgoraDashboard;
  const $ = (id) => document.getElementById(id);
  const PATHS = ['routine', 'llm', 'failure'];
  const COLORS = { routine: '#1f7a3a', llm: '#8a4b00', failure: '#b3261e', all: '#0b57d0' };
  const PALETTE = ['#6a3d9a', '#00838f', '#ad1457', '#5d4037', '#37474f'];
  const charts = {};
  let overview = { tokens: false };
  let recent = [];
  let stopFeed;

  const fmt = (n) => (n === null || n === undefined ? '—' : Number.isInteger(n) ? String(n) : n.toFixed(1));
  const short = (hash) => (hash ? hash.slice(0, 10) : '');
  const pathLabel = (path) => (path === 'llm' ? 'LLM' : path);
  // A file's path with a line-break opportunity after each slash, so a narrow column breaks it between folders.
  const breakable = (file) => file.split(/(?<=\/)/).flatMap((part, index) => (index ? [el('wbr'), part] : [part]));

  // One uPlot chart per container, remade when its series change (uPlot's setData keeps the series). With no point
  // yet it spans the last minute on a 0–1 scale, so its axes show (uPlot draws none over no data), and says so.
  function chart(id, series, data, options) {
    const node = $(id);
    const empty = data[0].length === 0;
    const now = Date.now() / 1000;
    const shown = empty ? [[now - 60, now], ...series.map(() => [null, null])] : data;
    const key = series.map((s) => s.label).join('|') + (empty ? '|empty' : '');
    if (charts[id] && charts[id].key === key) charts[id].plot.setData(shown);
    else {
      if (charts[id]) charts[id].plot.destroy();
      const [, ...yAxes] = (options && options.axes) || [{}, {}];
      const plot = new window.uPlot(
        {
          width: chartWidth(node),
          height: 200,
          scales: { x: { time: true }, ...(empty ? { y: { range: [0, 1] } } : {}), ...(options && options.scales) },
          axes: [TIME_AXIS, ...yAxes],
          series: [{}, ...series],
        },
        shown,
        node,
      );
      charts[id] = { key, plot, node };
      resized.observe(node);
    }
    const note = node.parentElement.querySelector('.chart-empty');
    if (note) note.hidden = !empty;
    // The first series' points, for tests and for anyone reading the DOM: the chart itself is a canvas.
    node.dataset.points = String(data[1].filter((y) => y !== null && y !== undefined).length);
  }

  // A chart as wide as its panel (uPlot takes a width in px and keeps it): resized when its panel is, once laid out.
  const chartWidth = (node) => Math.max(200, node.clientWidth || 500);
  const resized = new ResizeObserver((entries) => {
    for (const entry of entries) {
      const drawn = Object.values(charts).find((one) => one.node === entry.target);
      const width = chartWidth(entry.target);
      if (drawn && drawn.plot.width !== width) drawn.plot.setSize({ width, height: 200 });
    }
  });

  // Time labels as HH:MM:SS, at least a label's width apart (uPlot's default spacing lets them overlap), on whole
  // seconds (a tick each half second printed the same second twice).
  const TIME_AXIS = {
    space: 80,
    incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400],
    values: (plot, ticks) =>
      ticks.map((tick) =>
        new Date(tick * 1000).toLocaleTimeString([], {
          hour: '2-digit',
          minute: '2-digit',
          second: '2-digit',
          hour12: false,
        }),
      ),
  };

  const line = (label, stroke, scale) => ({
    label,
    stroke,
    width: 2,
    spanGaps: true,
    points: { show: true, size: 5 },
    ...(scale ? { scale } : {}),
  });

  // The protocols come a page at a time (an agent may hold tens of thousands).
  const PAGE = 100;
  let protocolOffset = 0;

  async function loadProtocols() {
    const page = await request(`api/protocols?offset=${protocolOffset}&limit=${PAGE}`);
    const rows = page.rows;
    replace(
      $('protocol-rows'),
      ...(rows.length
        ? rows.map(protocolRow)
        : [el('tr', {}, el('td', { colspan: 6, class: 'empty', text: 'No protocol yet' }))]),
    );
    const pager = $('protocol-pages');
    pager.hidden = page.total <= PAGE;
    const move = (offset) => () => {
      protocolOffset = offset;
      void loadProtocols();
    };
    replace(
      pager,
      el(
        'button',
        {
          type: 'button',
          class: 'link',
          disabled: page.offset === 0 ? true : undefined,
          onclick: move(Math.max(0, page.offset - PAGE)),
        },
        'Previous',
      ),
      ` ${page.offset + 1}–${page.offset + rows.length} of ${page.total} `,
      el(
        'button',
        {
          type: 'button',
          class: 'link',
          disabled: page.offset + rows.length >= page.total ? true : undefined,
          onclick: move(page.offset + PAGE),
        },
        'Next',
      ),
    );
  }

  function protocolRow(row) {
    const show = el(
      'button',
      { type: 'button', class: 'link', onclick: () => showText(row), 'aria-label': `Show the text of ${row.name}` },
      row.name,
    );
    return el(
      'tr',
      { 'data-hash': row.hash },
      el('td', {}, show),
      el('td', { class: 'hash', title: row.hash }, short(row.hash)),
      el('td', {}, ...(row.origin === 'folder' ? breakable(row.file || 'folder') : ['a peer'])),
      el(
        'td',
        {},
        el(
          'span',
          {
            class: `answered path-${row.answeredBy === 'LLM' ? 'llm' : row.answeredBy === 'not served' ? 'failure' : 'routine'}`,
          },
          row.answeredBy,
        ),
        row.note ? el('div', { class: 'hint' }, row.note) : null,
      ),
      el('td', {}, `${row.queries.routine} / ${row.queries.llm} / ${row.queries.failure}`),
      el('td', {}, time(row.lastUsedAt)),
    );
  }

  async function showText(row) {
    const { text } = await request(`api/protocols/${row.hash}`);
    const box = $('protocol-text');
    box.hidden = false;
    $('protocol-text-title').textContent = `${row.name} (${short(row.hash)})`;
    box.querySelector('pre').textContent = text;
    box.querySelector('pre').focus();
  }

  function renderLive(live) {
    $('open-count').textContent = String(live.open);
    replace(
      $('open-by-protocol'),
      ...(live.openByProtocol || []).map((entry) => el('li', {}, `${entry.name}: ${entry.count}`)),
    );
    const xs = live.rates.map((bucket) => bucket.at / 1000);
    chart(
      'rate-chart',
      PATHS.map((path) => line(pathLabel(path), COLORS[path])),
      [xs, ...PATHS.map((path) => live.rates.map((bucket) => bucket[path]))],
    );
    replace(
      $('recent-failures'),
      ...(live.failures.length
        ? live.failures.map((failure) =>
            el(
              'li',
              {},
              `${time(failure.at)} · ${failure.protocol}: `,
              el('span', { class: 'path-failure' }, failure.reason),
            ),
          )
        : [el('li', { class: 'empty' }, 'None')]),
    );
  }

  function renderRecent() {
    replace(
      $('recent-queries'),
      ...(recent.length
        ? recent.map((event) =>
            el(
              'li',
              { 'data-path': event.path, 'data-protocol': event.protocol },
              `${time(event.at)} · ${event.protocol} · `,
              el('span', { class: `path-${event.path}` }, pathLabel(event.path)),
            ),
          )
        : [el('li', { class: 'empty' }, 'None yet')]),
    );
  }

  async function loadCost() {
    const cost = await request('api/cost');
    const { totals } = cost;
    const queries = totals.queries.routine + totals.queries.llm + totals.queries.failure;
    const tokens = totals.inputTokens + totals.outputTokens;
    const facts = [
      ['Queries', queries],
      ['By routine', totals.queries.routine],
      ['By the LLM', totals.queries.llm],
      ['Failed', totals.queries.failure],
      ['LLM calls', totals.llmCalls],
      ['Tokens (in + out)', `${totals.inputTokens} + ${totals.outputTokens}`],
      ['Tokens per query', queries ? fmt(tokens / queries) : '—'],
    ];
    replace(
      $('cost-totals'),
      ...facts.map(([label, value]) => el('div', {}, el('dt', {}, label), el('dd', {}, String(value)))),
    );
    const names = Object.entries(cost.protocols)
      .sort((a, b) => b[1].tokens - a[1].tokens)
      .slice(0, PALETTE.length)
      .map(([name]) => name);
    const xs = cost.buckets.map((bucket) => bucket.at / 1000);
    const perQuery = (cells, field) => {
      let spent = 0;
      let count = 0;
      for (const cell of cells) {
        spent += cell[field];
        count += cell.routine + cell.llm + cell.failure;
      }
      return count ? spent / count : null;
    };
    const allTokens = cost.buckets.map((bucket) => perQuery(Object.values(bucket.protocols), 'tokens'));
    const byName = names.map((name) =>
      cost.buckets.map((bucket) => (bucket.protocols[name] ? perQuery([bucket.protocols[name]], 'tokens') : null)),
    );
    // By path: what a query answered by the LLM costs (a routine's costs nothing but the writing of it).
    const llmTokens = cost.buckets.map((bucket) => {
      const cells = Object.values(bucket.protocols);
      const answered = cells.reduce((sum, cell) => sum + cell.llm, 0);
      return answered ? cells.reduce((sum, cell) => sum + cell.tokens, 0) / answered : null;
    });
    chart(
      'cost-chart',
      [
        line('All protocols', COLORS.all),
        { ...line('Per LLM-answered query', COLORS.llm), dash: [6, 4] },
        ...names.map((name, index) => line(name, PALETTE[index])),
      ],
      [xs, allTokens, llmTokens, ...byName],
    );
    const calls = cost.buckets.map((bucket) => perQuery(Object.values(bucket.protocols), 'llmCalls'));
    const share = cost.buckets.map((bucket) => {
      const cells = Object.values(bucket.protocols);
      const count = cells.reduce((sum, cell) => sum + cell.routine + cell.llm + cell.failure, 0);
      return count ? (100 * cells.reduce((sum, cell) => sum + cell.routine, 0)) / count : null;
    });
    chart(
      'path-chart',
      [line('LLM calls per query', COLORS.llm), line('% by routine', COLORS.routine, '%')],
      [xs, calls, share],
      {
        scales: { '%': { range: [0, 100] } },
        axes: [{}, {}, { scale: '%', side: 1, grid: { show: false } }],
      },
    );
    replace(
      $('cost-rows'),
      ...Object.entries(cost.protocols).map(([name, row]) => {
        const count = row.routine + row.llm + row.failure;
        return el(
          'tr',
          {},
          el('th', { scope: 'row' }, name),
          el('td', {}, row.routine),
          el('td', {}, row.llm),
          el('td', {}, row.failure),
          el('td', {}, row.llmCalls),
          el('td', {}, row.tokens),
          el('td', {}, count ? fmt(row.tokens / count) : '—'),
        );
      }),
    );
  }

  async function loadRoutines() {
    const routines = await request('api/routines');
    $('review-note').textContent = overview.tokens
      ? 'Approve or reject each routine after reading its code and checks.'
      : 'Read-only: approving or rejecting needs the agent to require a token (--token, or the tokens option).';
    replace(
      $('routine-list'),
      ...(routines.length
        ? routines.map(routineCard)
        : [el('p', { class: 'empty' }, 'None yet: the LLM writes one after a protocol has been served enough times.')]),
    );
  }

  function routineCard(routine) {
    const titleId = `routine-${routine.id}`;
    const message = el('p', { class: 'error', role: 'alert' });
    const act = async (decision) => {
      try {
        await request(`api/routines/${encodeURIComponent(routine.id)}/${decision}`, { method: 'POST' });
        status(`${decision === 'approve' ? 'Approved' : 'Rejected'} ${routine.id}`);
        await Promise.all([loadRoutines(), loadProtocols()]);
      } catch (error) {
        message.textContent = error.message;
      }
    };
    // A button only where its decision applies: none in read-only mode, none on a routine already approved.
    const reviewable = overview.tokens && routine.status !== 'approved';
    const approve =
      reviewable && ['pending', 'rejected', 'disabled'].includes(routine.status)
        ? el(
            'button',
            { type: 'button', class: 'approve', onclick: () => act('approve'), 'aria-describedby': 'review-note' },
            'Approve',
          )
        : null;
    const reject =
      reviewable && ['pending', 'disabled'].includes(routine.status)
        ? el(
            'button',
            { type: 'button', class: 'reject', onclick: () => act('reject'), 'aria-describedby': 'review-note' },
            'Reject',
          )
        : null;
    const cases = routine.cases.length
      ? el(
          'div',
          { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': `Checks of ${routine.id}` },
          el(
            'table',
            {},
            el('caption', {}, 'Checks passed, with the expected and the actual reply'),
            el(
              'thead',
              {},
              el('tr', {}, ...['Check', 'Body', 'Expected', 'Actual'].map((name) => el('th', { scope: 'col' }, name))),
            ),
            el(
              'tbody',
              {},
              ...routine.cases.map((entry) =>
                el(
                  'tr',
                  {},
                  // How the reply was compared sits under the check's name: a column of its own crowds a phone.
                  el('td', {}, entry.label, el('div', { class: 'hint' }, `compared by ${entry.by}`)),
                  el('td', {}, el('code', {}, entry.body)),
                  el('td', {}, el('code', {}, entry.expected)),
                  el('td', {}, el('code', {}, entry.actual)),
                ),
              ),
            ),
          ),
        )
      : null;
    return el(
      'article',
      { class: 'routine', 'aria-labelledby': titleId, 'data-id': routine.id, 'data-status': routine.status },
      el(
        'h3',
        { id: titleId },
        routine.task ? `${routine.protocol} · task ${routine.task}` : routine.protocol,
        ' ',
        el('span', { class: `status-${routine.status}` }, routine.status),
      ),
      el(
        'p',
        { class: 'hint' },
        `${routine.id} · ${routine.model || 'model unknown'} · written ${routine.createdAt || '—'}${routine.reviewedAt ? ` · reviewed ${routine.reviewedAt}` : ''}${routine.reason ? ` · ${routine.reason}` : ''}`,
      ),
      el(
        'p',
        {},
        // Conversations are counted once, answers once per turn: the LLM's may outnumber the conversations.
        `Conversations: ${routine.uses.uses} · answers by the LLM: ${routine.uses.llm} · conversations by the routine: ${routine.uses.routine} · routine failures: ${routine.uses.failures}`,
      ),
      routine.checks.length ? el('ul', {}, ...routine.checks.map((check) => el('li', {}, check))) : null,
      cases,
      routine.errors.length
        ? el('ul', { class: 'error' }, ...routine.errors.map((error) => el('li', {}, error)))
        : null,
      routine.code !== undefined
        ? el(
            'details',
            {},
            el('summary', {}, `Code (${routine.file})`),
            el('pre', { tabindex: 0, 'aria-label': `Code of ${routine.id}` }, el('code', {}, routine.code)),
          )
        : null,
      approve || reject ? el('div', { class: 'actions' }, approve, reject) : null,
      message,
    );
  }

  const refreshTables = throttle(() => void Promise.all([loadProtocols(), loadCost()]).catch(report), 1000);
  const refreshRoutines = throttle(() => void loadRoutines().catch(report), 2000);

  function report(error) {
    status(`Could not load: ${error.message}`);
  }

  function onMessage(event, data) {
    if (event === 'hello') {
      recent = data.recent;
      renderRecent();
      renderLive(data.live);
      return;
    }
    if (event === 'routines') {
      void Promise.all([loadRoutines(), loadProtocols()]).catch(report);
      return;
    }
    if (event !== 'changed') return;
    const added = data.events.filter((change) => change.kind === 'query').reverse();
    recent = [...added, ...recent].slice(0, 30);
    renderRecent();
    renderLive(data.live);
    refreshTables();
    refreshRoutines();
  }

  async function start() {
    try {
      overview = await request('api/overview');
    } catch (error) {
      if (error.status !== 401) report(error);
      return;
    }
    $('agent-name').textContent = overview.name;
    document.title = `${overview.name} · Agora dashboard`;
    const mcp = (overview.mcpServers || []).map(
      (server) =>
        `${server.name} ${server.state === 'failed' ? `failed (${server.error || 'unknown'})` : `${server.tools} tools`}`,
    );
    status(
      `LLM: ${overview.llm || 'none'}${mcp.length ? ` · MCP servers: ${mcp.join(', ')}` : ''} · since ${time(overview.startedAt)}`,
    );
    await Promise.all([loadProtocols(), loadCost(), loadRoutines()]).catch(report);
    if (stopFeed) stopFeed();
    stopFeed = feed(onMessage);
  }

  setup(start);
})();

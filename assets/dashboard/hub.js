// Agora hub dashboard: registered agents, the catalogue, the cost per query agents report (drawn with uPlot),
// chains with their hops, and rooms, pushed over `events`.
'use strict';

(function () {
  const { el, request, feed, setup, status, time, replace } = window.AgoraDashboard;
  const $ = (id) => document.getElementById(id);
  const none = (text, columns) =>
    columns ? el('tr', {}, el('td', { colspan: columns, class: 'empty' }, text)) : el('p', { class: 'empty' }, text);
  let stopFeed;

  // A hop's tokens as its agent reported them: input and output, and the model; "—" when it reported none.
  function hopTokens(hop) {
    if (!hop.usage) return '—';
    const { inputTokens, outputTokens, model } = hop.usage;
    return `${inputTokens} in / ${outputTokens} out${model ? ` (${model})` : ''}`;
  }

  // A hop's bar on the chain's time line: where it started and how long it took, to the chain's whole span, and beside
  // it the hop's time and tokens. Set through the CSSOM (the page's policy refuses style attributes).
  function waterfall(chain, hop) {
    const bar = el('span', { class: hop.ok ? 'waterfall-bar' : 'waterfall-bar failed' });
    bar.style.marginLeft = `${((hop.offsetMs / chain.spanMs) * 100).toFixed(2)}%`;
    bar.style.width = `${Math.max(0.5, (hop.ms / chain.spanMs) * 100).toFixed(2)}%`;
    const tokens = hopTokens(hop);
    return el(
      'div',
      { class: 'waterfall-row' },
      el(
        'div',
        {
          class: 'waterfall',
          role: 'img',
          'aria-label': `${hop.agentName}: from ${hop.offsetMs} ms, for ${hop.ms} ms; tokens: ${tokens}`,
        },
        bar,
      ),
      el('span', { class: 'waterfall-tokens' }, `tokens: ${tokens}`),
    );
  }
  // The Cost panel: one curve per series of usage reports (a moving average, query number on x), and the last
  // window's queries and cost by path. Its own state, so that the rest of the page renders without it.
  const COST_COLORS = ['#c0392b', '#2471a3', '#1f7a3a', '#8a4b00', '#6a3d9a', '#00838f', '#ad1457', '#37474f'];
  let costPlot;
  function renderCost(usage) {
    const node = $('cost-chart');
    const money = usage.unit === 'dollars';
    const amount = (value) =>
      money ? `$${value < 0.01 ? value.toFixed(5) : value.toFixed(4)}` : String(Math.round(value));
    $('cost-note').textContent = !usage.enabled
      ? 'This hub keeps no usage reports (--usage-reports 0).'
      : usage.series.length
        ? `${usage.series.length} series, reported by agents (POST /usage); moving average over ${usage.window} queries.`
        : "No usage reported yet: agents report each query's LLM calls and tokens with POST /usage.";
    $('cost-caption').textContent =
      `${money ? 'Dollars' : 'Tokens'} per query, moving average over ${usage.window} queries`;
    const first = Math.min(...usage.series.map((one) => one.first), Infinity);
    const last = Math.max(...usage.series.map((one) => one.first + one.average.length - 1), -Infinity);
    const xs = [];
    for (let x = first; x <= last; x++) xs.push(x);
    const data = [
      xs,
      ...usage.series.map((one) =>
        xs.map((x) => (x >= one.first && x - one.first < one.average.length ? one.average[x - one.first] : null)),
      ),
    ];
    const key = usage.series.map((one) => one.name).join('|') + usage.unit;
    if (costPlot && costPlot.key === key) costPlot.plot.setData(data);
    else {
      if (costPlot) costPlot.plot.destroy();
      costPlot = undefined;
      if (usage.series.length) {
        const plot = new window.uPlot(
          {
            width: Math.max(300, node.clientWidth || 600),
            height: 240,
            scales: { x: { time: false } },
            axes: [
              { label: 'query' },
              {
                label: money ? 'USD per query' : 'tokens per query',
                size: 70,
                values: (u, ticks) => ticks.map(amount),
              },
            ],
            series: [
              {},
              ...usage.series.map((one, index) => ({
                label: one.name,
                stroke: COST_COLORS[index % COST_COLORS.length],
                width: 2,
                value: (u, value) => (value === null || value === undefined ? '—' : amount(value)),
              })),
            ],
          },
          data,
          node,
        );
        costPlot = { key, plot };
      }
    }
    // The points drawn, per series, for tests and for anyone reading the DOM: the chart itself is a canvas.
    node.dataset.points = usage.series.map((one) => one.average.length).join(',');
    node.dataset.last = usage.series.map((one) => one.average.at(-1) ?? '').join(',');
    const rows = [];
    for (const one of usage.series) {
      const entries = Object.entries(one.byPath);
      const total = entries.reduce((sum, [, sums]) => sum + sums.cost, 0);
      for (const [path, sums] of entries)
        rows.push(
          el(
            'tr',
            {},
            el('th', { scope: 'row' }, one.name),
            el('td', {}, path),
            el('td', {}, sums.queries),
            el('td', {}, sums.calls),
            el('td', {}, sums.tokens),
            el('td', {}, amount(sums.cost)),
            el('td', {}, total > 0 ? `${((sums.cost / total) * 100).toFixed(1)}%` : '—'),
          ),
        );
    }
    $('cost-table-caption').textContent = `Last ${usage.window} queries of each series, by path`;
    replace($('usage-rows'), ...(rows.length ? rows : [none('No usage reported yet', 7)]));
  }

  function render(state) {
    renderCost(state.usage);
    replace(
      $('agent-rows'),
      ...(state.agents.length
        ? state.agents.map((agent) =>
            el(
              'tr',
              { 'data-id': agent.id, 'data-status': agent.status },
              el('th', { scope: 'row' }, agent.name),
              el('td', { class: 'hash' }, agent.url),
              el(
                'td',
                {},
                el('span', { class: `state-${agent.status}` }, agent.status),
                agent.lastError ? el('div', { class: 'hint' }, agent.lastError) : null,
              ),
              el('td', {}, agent.protocols.map((protocol) => protocol.name).join(', ') || '—'),
              el('td', {}, time(agent.lastSeen)),
            ),
          )
        : [none('No agent registered yet', 5)]),
    );
    replace(
      $('catalogue-rows'),
      ...(state.catalogue.length
        ? state.catalogue.map((entry) =>
            el(
              'tr',
              {},
              el('th', { scope: 'row' }, entry.name),
              el('td', { class: 'hash', title: entry.hash }, entry.hash.slice(0, 10)),
              el('td', {}, entry.description),
              el('td', {}, entry.servedBy.join(', ') || '—'),
            ),
          )
        : [none('No protocol published yet', 4)]),
    );
    replace(
      $('chain-list'),
      ...(state.chains.length
        ? state.chains.map((chain) =>
            el(
              'article',
              { class: 'chain', 'aria-label': `Chain ${chain.id}` },
              el(
                'h3',
                {},
                chain.goal || chain.id,
                ' ',
                el(
                  'span',
                  {
                    class:
                      chain.status === 'done'
                        ? 'state-up'
                        : chain.status === 'running'
                          ? 'status-pending'
                          : 'state-down',
                  },
                  chain.status,
                ),
              ),
              el(
                'p',
                { class: 'hint' },
                `${chain.id} · started ${time(chain.createdAt)} · updated ${time(chain.updatedAt)}${chain.error ? ` · ${chain.error}` : ''}`,
              ),
              el(
                'ol',
                {},
                ...chain.hops.map((hop) =>
                  el(
                    'li',
                    {},
                    `${hop.agentName} (${hop.by}: ${hop.reason || '—'}) · ${hop.ms} ms · `,
                    el('span', { class: hop.ok ? 'state-up' : 'state-down' }, hop.ok ? 'ok' : 'failed'),
                    waterfall(chain, hop),
                    hop.result ? el('div', {}, el('code', {}, hop.result)) : null,
                    hop.error ? el('div', { class: 'error' }, hop.error) : null,
                  ),
                ),
              ),
            ),
          )
        : [none('No chain run yet')]),
    );
    if (state.rooms === null) {
      replace($('room-list'), none('Rooms are not available on this hub.'));
      return;
    }
    replace(
      $('room-list'),
      ...(state.rooms.length
        ? state.rooms.map((room) =>
            el(
              'article',
              { class: 'room', 'aria-label': `Room ${room.name}` },
              el('h3', {}, room.name),
              el('p', { class: 'hint' }, `Members: ${room.members.join(', ') || '—'}`),
              el(
                'ol',
                { class: 'feed', tabindex: 0, 'aria-label': `Transcript of ${room.name}` },
                ...room.transcript.map((entry) => el('li', {}, `${time(entry.at)} · ${entry.from}: ${entry.text}`)),
              ),
            ),
          )
        : [none('No room open')]),
    );
  }

  async function start() {
    try {
      render(await request('api/state'));
    } catch (error) {
      if (error.status !== 401) status(`Could not load: ${error.message}`);
      return;
    }
    if (stopFeed) stopFeed();
    stopFeed = feed((event, data) => {
      if (event === 'state') render(data);
    });
  }

  setup(start);
})();

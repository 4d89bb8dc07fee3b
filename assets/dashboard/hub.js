// Agora hub dashboard: registered agents, the catalogue, chains with their hops, and rooms, pushed over `events`.
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
  function render(state) {
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

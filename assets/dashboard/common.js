// Agora dashboard, shared by the agent and hub pages: the token (kept for this tab only, sent as a bearer header),
// JSON requests, the live feed (server-sent events read with fetch, so the token travels in a header, never in a
// URL), and a DOM builder that only ever sets text: everything shown may come from a hostile peer.
'use strict';

(function () {
  const KEY = 'agora-dashboard-token';
  const statusLine = () => document.getElementById('status');

  /** Builds an element; children and the `text` prop become text nodes, never HTML. */
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = String(value);
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children)
      if (child !== undefined && child !== null) node.append(child instanceof Node ? child : String(child));
    return node;
  }

  function token() {
    return sessionStorage.getItem(KEY);
  }

  function headers() {
    const value = token();
    return value ? { authorization: `Bearer ${value}` } : {};
  }

  function status(text) {
    const line = statusLine();
    if (line) line.textContent = text;
  }

  let onSignedIn = () => {};

  function askForToken(message) {
    const form = document.getElementById('sign-in');
    form.hidden = false;
    status(message || 'Sign in with the token to see this dashboard.');
    document.getElementById('token').focus();
  }

  /** A refused or failed request, with the server's message. */
  class RequestError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  /** A JSON request relative to the dashboard; a 401 shows the sign-in form. */
  async function request(path, options) {
    const response = await fetch(path, {
      ...(options || {}),
      headers: { ...headers(), ...((options && options.headers) || {}) },
    });
    let body;
    try {
      body = await response.json();
    } catch {
      body = undefined;
    }
    if (response.status === 401) askForToken(body && body.error);
    if (!response.ok) throw new RequestError(response.status, (body && body.error) || `HTTP ${response.status}`);
    return body;
  }

  /** Reads the live feed, calling `onMessage(event, data)` for each message; reconnects when it drops. */
  function feed(onMessage) {
    let delay = 1000;
    let controller;
    async function connect() {
      controller = new AbortController();
      try {
        const response = await fetch('events', { headers: headers(), signal: controller.signal });
        if (response.status === 401) return askForToken();
        if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
        delay = 1000;
        status('Live');
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let end;
          while ((end = buffer.indexOf('\n\n')) !== -1) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            let event = 'message';
            let data = '';
            for (const line of frame.split('\n')) {
              if (line.startsWith('event: ')) event = line.slice(7);
              else if (line.startsWith('data: ')) data += line.slice(6);
            }
            if (data) onMessage(event, JSON.parse(data));
          }
        }
      } catch (error) {
        if (controller.signal.aborted) return;
      }
      status(`Live feed lost; reconnecting in ${Math.round(delay / 1000)} s…`);
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 15000);
    }
    connect();
    return () => controller && controller.abort();
  }

  /** Wires the sign-in form and sign-out button; `start` runs now (or once signed in, when a token is needed) and after each sign-in. */
  async function setup(start) {
    onSignedIn = start;
    const form = document.getElementById('sign-in');
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const input = document.getElementById('token');
      sessionStorage.setItem(KEY, input.value.trim());
      input.value = '';
      form.hidden = true;
      document.getElementById('sign-out').hidden = false;
      onSignedIn();
    });
    const signOut = document.getElementById('sign-out');
    signOut.hidden = !token();
    signOut.addEventListener('click', () => {
      sessionStorage.removeItem(KEY);
      location.reload();
    });
    // Whether a token is needed, asked first: the page never sends a request it knows will be refused.
    try {
      const access = await request('api/access');
      if (access.tokens && !token()) return askForToken();
    } catch (error) {
      return status(error.message);
    }
    start();
  }

  function time(ms) {
    return ms ? new Date(ms).toLocaleTimeString() : '—';
  }

  function replace(node, ...children) {
    node.replaceChildren(...children.filter((child) => child !== undefined && child !== null));
  }

  /** Runs `work` at most once per `ms`, the last call winning. */
  function throttle(work, ms) {
    let timer;
    let again = false;
    return () => {
      if (timer) {
        again = true;
        return;
      }
      work();
      timer = setTimeout(() => {
        timer = undefined;
        if (again) {
          again = false;
          work();
        }
      }, ms);
    };
  }

  window.AgoraDashboard = {
    el,
    request,
    feed,
    setup,
    status,
    time,
    replace,
    throttle,
    hasToken: () => token() !== null,
  };
})();

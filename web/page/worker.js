// The engine's thread: long runs here leave the page responsive, and Stop ends this worker
// (the page starts a fresh one). Messages: {id, fn, request} in, {id, reply} out, where fn is
// an API function of web/engine/api.cpp and reply its answer ({out, err, code, loc}).
/* global createToysim */
importScripts('toysim_engine.js');
const ready = createToysim();
self.onmessage = async (event) => {
  const { id, fn, request } = event.data;
  const engine = await ready;
  let reply;
  try {
    reply = JSON.parse(engine[fn](JSON.stringify(request)));
  } catch (e) {  // a trap in the engine: a bug, said as the CLI says an internal error
    reply = { out: '', err: `toysim: internal error: ${e}\n`, code: 3, loc: null };
  }
  self.postMessage({ id, reply });
};
// Ready, with the words the editor colours (toy-mode.js).
ready.then((engine) => self.postMessage({ id: 0, ready: true, language: JSON.parse(JSON.parse(engine.language('{}')).out) }));

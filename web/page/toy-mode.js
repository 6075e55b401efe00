// CodeMirror 5's mode for .toy programs (addon/mode/simple.js). Its words come from the engine
// (the `language` call: the parser's statement and exercise keywords, the ISA table's opcodes),
// so the editor colours what the machine has; the words inside statements (for … in, test …
// visible|hidden points N seed = N), registers, tile names where a `tile` line declares them,
// numbers and # comments are matched here.
/* global CodeMirror */
'use strict';

function defineToyMode(language) {
  // Longest first, so that STORE_ADD is not read as STORE.
  const words = (list) => [...list].sort((a, b) => b.length - a.length).map((w) => w.replace(/\W/g, '\\$&')).join('|');
  const keywords = [...language.keywords, 'in', 'visible', 'hidden', 'points', 'seed'];
  CodeMirror.defineSimpleMode('toy', {
    start: [
      { regex: /#.*/, token: 'comment' },
      { regex: /\b(tile)(\s+)([A-Za-z_]\w*)/, token: ['keyword', null, 'tile'] },
      { regex: new RegExp(`\\b(?:${words(keywords)})\\b`), token: 'keyword' },
      { regex: new RegExp(`\\b(?:${words(language.opcodes)})\\b`), token: 'opcode' },
      { regex: /\b[Rr]\d+\b/, token: 'register' },
      { regex: /\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b/i, token: 'number' },
      { regex: /"(?:[^"\\]|\\.)*"/, token: 'string' },
    ],
    meta: { lineComment: '#' },
  });
}

// Loads the browser's engine (build-wasm/playground/toysim_engine.{js,wasm}) under node, and
// turns a toysim command line into the engine's API call (web/engine/api.cpp), for the tests
// in this folder. node's own fetch cannot read a file path, so the wasm is handed over as bytes.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

export async function loadEngine(folder) {
  const playground = path.resolve(folder);
  const require = createRequire(import.meta.url);
  const createToysim = require(path.join(playground, 'toysim_engine.js'));
  return createToysim({ wasmBinary: fs.readFileSync(path.join(playground, 'toysim_engine.wasm')) });
}

// The API call for `toysim ARGS...` run from the repository root `root`: {fn, request}, or
// {skip: why} for what the engine does not do.
export function requestFor(args, root) {
  const [command, ...rest] = args;
  const files = [], request = { sets: [], show: [] };
  for (let i = 0; i < rest.length; ++i) {
    const word = rest[i];
    const value = () => {
      if (i + 1 >= rest.length) throw new Error(`${word} needs a value`);
      return rest[++i];
    };
    if (word === '--set') request.sets.push(value());
    else if (word === '--show') request.show.push(value());
    else if (word === '--format') request.format = value();
    else if (word === '--values') request.values = value();
    else if (word === '--max-steps') request.max_steps = Number(value());
    else if (word === '--ditto') request.ditto = true;
    else if (word === '--stats') request.stats = true;
    else if (word === '--schedule') request.schedule = true;
    else if (word === '--registers') request.registers = Number(value());
    else if (word === '--gpu') return { skip: 'compares with a GPU measurement: the GPU layer (gpu/) is not in the browser engine' };
    else if (word.startsWith('-')) throw new Error(`the test does not know the flag ${word}`);
    else files.push(word);
  }
  const program = (file) => ({ path: file, text: fs.readFileSync(path.join(root, file), 'utf8') });
  if (command === 'compare') return { fn: 'compare', request: { ...request, programs: files.map(program) } };
  if (!['run', 'trace', 'cost', 'sweep', 'tune'].includes(command)) return { skip: `\`toysim ${command}\` is not in the browser engine` };
  if (files.length !== 1) throw new Error(`${command} takes one program, got ${files.length}`);
  return { fn: command, request: { ...request, ...program(files[0]) } };
}

// Calls the engine: the reply as an object ({out, err, code, loc}).
export function call(engine, fn, request) {
  return JSON.parse(engine[fn](JSON.stringify(request)));
}

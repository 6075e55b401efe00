// Shared by test.mjs and screenshot.mjs: playwright-core from BUILD_DIR/browser-test (where
// run.sh installs it with npm ci), Chromium, and running toysim.
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const chromiumPath = process.env.TOYSIM_CHROMIUM || "/usr/bin/chromium";

export function buildDir() {
  const dir = process.argv[2];
  if (!dir) {
    console.error("usage: node " + path.relative(repo, process.argv[1]) + " BUILD_DIR");
    process.exit(2);
  }
  return path.resolve(dir);
}

export function workDir(build) {
  const dir = path.join(build, "browser-test");
  fs.mkdirSync(path.join(dir, "out"), { recursive: true });
  return dir;
}

export function loadPlaywright(build) {
  const require = createRequire(path.join(workDir(build), "package.json"));
  try {
    return require("playwright-core");
  } catch (err) {
    console.error(`error: playwright-core is not installed in ${workDir(build)}: run tests/browser/run.sh ${build} (it runs npm ci there)`);
    process.exit(1);
  }
}

// Runs BUILD_DIR/toysim ARGS in the repository root (`input` on its standard input); returns
// {code, stdout, stderr}.
export function toysim(build, args, { allowFail = false, input = undefined } = {}) {
  try {
    const stdout = execFileSync(path.join(build, "toysim"), args, { cwd: repo, encoding: "utf8", maxBuffer: 1 << 30, input,
                                                                    stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    return { code: 0, stdout, stderr: "" };
  } catch (err) {
    if (!allowFail || typeof err.status !== "number") throw new Error(`toysim ${args.join(" ")} failed (${err.status}): ${err.stderr || err.message}`);
    return { code: err.status, stdout: err.stdout, stderr: err.stderr };
  }
}

export async function launch(build) {
  const { chromium } = loadPlaywright(build);
  return chromium.launch({ executablePath: chromiumPath, headless: true });
}

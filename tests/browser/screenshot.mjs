// Takes the screenshot of `toysim view` in docs/classroom.md: the seed 001 FlashAttention-2 example just
// after the first MAC of the second K/V tile, 1280×800, into docs/viewer_seed001_fa2.png.
//   node tests/browser/screenshot.mjs BUILD_DIR [OUT.png]
import path from "node:path";
import { pathToFileURL } from "node:url";
import { buildDir, launch, repo, toysim, workDir } from "./lib.mjs";

const build = buildDir();
const out = path.resolve(process.argv[3] || path.join(repo, "docs/viewer_seed001_fa2.png"));
const html = path.join(workDir(build), "out", "screenshot_seed001_fa2.html");
toysim(build, ["view", "programs/attention/seed001_fa2_tiled.toy", "-o", html]);

const browser = await launch(build);
const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
await page.goto(pathToFileURL(html).href);
await page.waitForSelector("body[data-ready]");
// The second MAC (not MAC_Z) of the run: the first one of the second K/V tile.
const step = await page.evaluate(() => {
  const data = JSON.parse(document.getElementById("toysim-data").textContent);
  const macs = [];
  data.steps.forEach((s, i) => { if (/^MAC /.test(s.text)) macs.push(i + 1); });
  return macs[1];
});
await page.keyboard.press("Home");
for (let k = 0; k < step; k++) await page.keyboard.press("ArrowRight");
await page.waitForFunction((k) => document.getElementById("step").textContent === String(k), step);
await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
await page.screenshot({ path: out });
await browser.close();
console.log(`wrote ${path.relative(process.cwd(), out)} (step ${step})`);

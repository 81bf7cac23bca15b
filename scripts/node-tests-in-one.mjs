// Runs the node:test files given as arguments in this one process, one file after another, with the reporters given
// on the command line: node --test-reporter=... scripts/node-tests-in-one.mjs FILE...
// Why: Node 20's `node --test` starts a process per file (and node 20 has no `--test-isolation=none`), and the fast
// tier's 54 files then spent about a third of their CPU starting node and loading the same modules again (44.6 s of
// CPU one process per file, 31.9 s in one process, on 2 vCPUs). scripts/test.sh runs a few of these at once.
// A file that fails to load is one failed test named by its path, so the totals still count it.
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

for (const file of process.argv.slice(2)) {
  try {
    await import(pathToFileURL(path.resolve(file)).href);
  } catch (err) {
    test(`${file} loads`, () => {
      throw err;
    });
  }
}

// @ts-check
// Creating a run's directory. Node's own `mkdirSync(dir, { recursive: true })` never returns on special filesystems
// (/proc answers ENOENT for a parent that exists, and Node retries forever), so directories are made one component at
// a time here, and a directory that cannot be made or written is a clear error at once.
import fs from 'node:fs';
import path from 'node:path';

export class DirectoryError extends Error {}

/**
 * Make `dir` and its missing parents, then check that a file can be written in it.
 * @param {string} dir
 * @returns {string} the absolute path
 */
export function makeWritableDirectory(dir) {
  const absolute = path.resolve(dir);
  const missing = [];
  for (let d = absolute; !fs.existsSync(d); d = path.dirname(d)) missing.unshift(d);
  for (const d of missing) {
    try {
      fs.mkdirSync(d);
    } catch (err) {
      const e = /** @type {NodeJS.ErrnoException} */ (err);
      if (e.code !== 'EEXIST') throw new DirectoryError(`cannot create the directory ${absolute}: ${e.code ?? e.message} at ${d}`);
    }
  }
  if (!fs.statSync(absolute).isDirectory()) throw new DirectoryError(`${absolute} exists and is not a directory`);
  const probe = path.join(absolute, `.rtclab-write-check-${process.pid}`);
  try {
    fs.writeFileSync(probe, '');
    fs.unlinkSync(probe);
  } catch (err) {
    throw new DirectoryError(`cannot write in ${absolute}: ${/** @type {NodeJS.ErrnoException} */ (err).code ?? /** @type {Error} */ (err).message}`);
  }
  return absolute;
}

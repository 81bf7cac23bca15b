// @ts-check
/**
 * The clips a scenario names by a short name instead of a path (`call.video_clip: natural`), each made into media/ by
 * scripts/setup.sh (default) or on first use (natural: about a minute and 830 MB; default-60fps: 415 MB; too much for
 * every setup). It imports nothing of the project, so the scenario model resolves names without loading a generator.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const mediaDir = path.dirname(fileURLToPath(import.meta.url));

/**
 * Name -> file in media/. default: ffmpeg's testsrc2, 5 s at 30 fps (setup.sh); default-60fps: the same at 60 fps;
 * natural: a filmed photograph, 20 s (natural.js).
 */
export const NAMED_CLIPS = Object.freeze({ default: 'default.y4m', 'default-60fps': 'default-60fps.y4m', natural: 'natural.y4m' });

/**
 * The clip file a name stands for, or null when `value` is not a clip's name (then it is a path).
 * @param {string} value
 */
export function namedClipPath(value) {
  if (!Object.hasOwn(NAMED_CLIPS, value)) return null;
  return path.join(mediaDir, NAMED_CLIPS[/** @type {keyof typeof NAMED_CLIPS} */ (value)]);
}

/**
 * Whether a clip file is one setup makes (a missing one is then a setup not run, not a scenario's mistake).
 * @param {string} file
 */
export const isNamedClipFile = (file) => Object.values(NAMED_CLIPS).some((f) => path.join(mediaDir, f) === file);

/** The named clips made on first use, by their generator in media/ and its arguments (`node media/GENERATOR ARGS FILE`). */
export const MADE_ON_FIRST_USE = Object.freeze({
  natural: { generator: 'natural.js', args: [], takes: 'about a minute' },
  'default-60fps': { generator: 'testsrc.js', args: ['--fps', '60'], takes: 'a few seconds' },
});

/**
 * Makes a clip that is made on first use when its file is missing; returns whether it made one. scripts/setup.sh
 * remakes an existing one whose recipe or stamp is out of date.
 * @param {string} file
 * @param {(line: string) => void} [say]
 */
export function makeOnFirstUse(file, say = (line) => console.error(line)) {
  const name = Object.keys(MADE_ON_FIRST_USE).find((n) => path.join(mediaDir, NAMED_CLIPS[/** @type {keyof typeof NAMED_CLIPS} */ (n)]) === file);
  if (!name || fs.existsSync(file)) return false;
  const { generator, args, takes } = MADE_ON_FIRST_USE[/** @type {keyof typeof MADE_ON_FIRST_USE} */ (name)];
  say(`making the ${name} clip ${file} on its first use (media/${generator}: ${takes}, once)`);
  execFileSync(process.execPath, [path.join(mediaDir, generator), ...args, file], { stdio: ['ignore', 'inherit', 'inherit'] });
  return true;
}

// @ts-check
/**
 * The clips a scenario names by a short name instead of a path (`call.video_clip: natural`), each made into media/ by
 * scripts/setup.sh. It imports nothing of the project, so the scenario model resolves names without loading a
 * generator.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const mediaDir = path.dirname(fileURLToPath(import.meta.url));

/** Name -> file in media/. default: ffmpeg's testsrc2, 5 s (setup.sh); natural: a filmed photograph, 20 s (natural.js). */
export const NAMED_CLIPS = Object.freeze({ default: 'default.y4m', natural: 'natural.y4m' });

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

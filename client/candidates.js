/**
 * ICE candidate filtering: only candidates on the data network (address starting with candidate_prefix) are sent
 * or accepted, so media never takes the management link. Pure functions, tested in Node.
 */

/**
 * Fields of an ICE candidate line (RFC 8839 section 5.1):
 * `candidate:<foundation> <component> <protocol> <priority> <address> <port> typ <type> ...`
 * @param {string} line with or without the leading `a=`
 * @returns {{ address: string, port: number, protocol: string, candidateType: string } | null} null if not a candidate line
 */
export function parseCandidate(line) {
  const match = /^(?:a=)?candidate:\S+ \d+ (\S+) \d+ (\S+) (\d+) typ (\S+)/i.exec(line.trim());
  if (!match) return null;
  return { protocol: match[1].toLowerCase(), address: match[2], port: Number(match[3]), candidateType: match[4] };
}

/**
 * @param {string} line candidate line
 * @param {string | null | undefined} prefix e.g. '10.0.'; empty or null allows every candidate
 * @returns {boolean}
 */
export function isCandidateAllowed(line, prefix) {
  if (!prefix) return true;
  const candidate = parseCandidate(line);
  return candidate !== null && candidate.address.startsWith(prefix);
}

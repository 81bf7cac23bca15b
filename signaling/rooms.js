// @ts-check
/**
 * Rooms of two: pure bookkeeping, no I/O, so the rules can be tested without sockets.
 * The first member is the caller, the second the callee, unless a member asks for a role.
 */

/** @typedef {'caller' | 'callee'} Role */
/** @typedef {{ id: string, role: Role }} Member */
/** @typedef {{ ok: true, role: Role, peers: string[] } | { ok: false, error: string }} JoinResult */

export const ROOM_CAPACITY = 2;

export class Rooms {
  constructor() {
    /** @type {Map<string, Member[]>} room name -> members */
    this.rooms = new Map();
    /** @type {Map<string, string>} member id -> room name */
    this.roomOf = new Map();
  }

  /**
   * @param {string} id member (socket) id
   * @param {string} room
   * @param {Role} [requestedRole] role the member wants; refused when the other member holds it
   * @returns {JoinResult} on success, `peers` are the ids of the other members already in the room
   */
  join(id, room, requestedRole) {
    const current = this.roomOf.get(id);
    if (current !== undefined) return { ok: false, error: `already in room "${current}": leave it first` };
    const members = this.rooms.get(room) ?? [];
    if (members.length >= ROOM_CAPACITY) return { ok: false, error: `room "${room}" is full (${ROOM_CAPACITY} members)` };
    const taken = new Set(members.map((m) => m.role));
    /** @type {Role} */
    let role;
    if (requestedRole !== undefined) {
      if (taken.has(requestedRole)) return { ok: false, error: `role "${requestedRole}" is already taken in room "${room}"` };
      role = requestedRole;
    } else {
      role = taken.has('caller') ? 'callee' : 'caller';
    }
    const peers = members.map((m) => m.id);
    members.push({ id, role });
    this.rooms.set(room, members);
    this.roomOf.set(id, room);
    return { ok: true, role, peers };
  }

  /**
   * @param {string} id
   * @returns {{ room: string, peers: string[] } | null} the room left and the members still in it; null if in none
   */
  leave(id) {
    const room = this.roomOf.get(id);
    if (room === undefined) return null;
    this.roomOf.delete(id);
    const members = (this.rooms.get(room) ?? []).filter((m) => m.id !== id);
    if (members.length === 0) this.rooms.delete(room);
    else this.rooms.set(room, members);
    return { room, peers: members.map((m) => m.id) };
  }

  /**
   * The other member of `id`'s room: the only one its messages may reach.
   * @param {string} id
   * @returns {{ room: string, peer: string | null } | null} null when `id` is in no room
   */
  peerOf(id) {
    const room = this.roomOf.get(id);
    if (room === undefined) return null;
    const other = (this.rooms.get(room) ?? []).find((m) => m.id !== id);
    return { room, peer: other ? other.id : null };
  }

  /** @param {string} room */
  members(room) {
    return (this.rooms.get(room) ?? []).map((m) => ({ ...m }));
  }
}

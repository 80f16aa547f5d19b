import type { Socket } from 'node:net';

/**
 * Connections answered with `Connection: close` by an answer that refused its request early (417, a
 * missing Host, a body refused before it was read). Node goes on parsing what follows on the connection
 * and emits the requests pipelined behind the refused one, whose answers it then drops: such a request
 * would run (a row written, a completion charged) without its client ever learning the outcome.
 * `hostRequired`, first in the chain, drops any request on a marked connection.
 */
const closing = new WeakSet<object>();

export const markClosing = (socket: Socket | null | undefined): void => {
  if (socket) closing.add(socket);
};

export const isClosing = (socket: Socket | null | undefined): boolean =>
  !!socket && (closing.has(socket) || socket.destroyed || socket.writableEnded);

// A pause for the event loop: what waits on I/O (a statement's answer, the next statement to send) runs
// before the long CPU work that asked for the pause goes on. A promise resolved at once would not do: its
// continuation runs before any I/O callback.
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

// Why the service cannot listen, in one line that says what to do: Node's own error
// ("listen EADDRINUSE: address already in use 127.0.0.1:8080") names neither the
// variable to change nor the likely cause.

export function listenProblem(err: NodeJS.ErrnoException, host: string, port: number): string {
  switch (err.code) {
    case 'EADDRINUSE':
      return `port ${port} is taken on ${host}: stop the other service or set PORT`;
    case 'EADDRNOTAVAIL':
      return `HOST ${host} is not an address of this machine: set HOST to one of its addresses (0.0.0.0 for all)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `HOST ${host} is not a name this machine can resolve: set HOST to one of its addresses (0.0.0.0 for all)`;
    case 'EACCES':
      return `port ${port} needs privileges this user does not have: set PORT to one from 1024`;
    default:
      return `cannot listen on ${host} port ${port}: ${err.message}`;
  }
}

// Preloaded with `node -r` into a published MCP server: whatever address it asks for, it listens
// on 127.0.0.1 only (server-everything binds every interface), and it reports the port it got
// ("LISTENING 127.0.0.1 <port>" on stderr) so a test can start it with PORT=0 without a race.
const net = require("net");

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const callback = typeof args[args.length - 1] === "function" ? args.pop() : undefined;
  const first = args[0];
  const port = first !== null && typeof first === "object" ? first.port : first;
  this.once("listening", () => {
    const address = this.address();
    process.stderr.write(`LISTENING ${address.address} ${address.port}\n`);
  });
  return listen.call(this, { port: Number(port) || 0, host: "127.0.0.1" }, callback);
};

import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import {
  createServer as createHttpServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { join } from "node:path";
import { scratchDir } from "./scratch.js";

/** What the servers send for /x.csv. */
export const TEST_CSV = "city,people\nLyon,522250\nNantes,323204\n";

/**
 * Two servers on 127.0.0.1 a run's proxy reaches under made-up names, never an address off this
 * machine: plain HTTP, and HTTPS with a self-signed certificate for secure.test (its PEM is
 * `certificate`, for a program to trust). Each keeps the headers of the requests it answered.
 */
export interface EgressTestServers {
  httpPort: number;
  httpsPort: number;
  certificate: string;
  /** The same certificate as a file: the CA a proxy that connects on to secure.test must trust (SELFHEAL_EGRESS_CA_FILE). */
  certificateFile: string;
  /** Headers of every request the servers answered, in order. */
  seen: IncomingHttpHeaders[];
  /** `SELFHEAL_EGRESS_RESOLVE` for the names: data.test, secure.test and other.test all map to the servers. */
  resolveVariable: string;
  close(): Promise<void>;
}

function answer(seen: IncomingHttpHeaders[]) {
  return (request: IncomingMessage, response: ServerResponse) => {
    seen.push(request.headers);
    const url = new URL(request.url ?? "/", "http://server");
    request.resume();
    request.on("end", () => {
      if (url.pathname === "/x.csv") {
        response.writeHead(200, { "content-type": "text/csv" });
        response.end(TEST_CSV);
      } else if (url.pathname === "/redirect") {
        response.writeHead(302, { location: url.searchParams.get("to") ?? "/" });
        response.end();
      } else {
        response.writeHead(404);
        response.end("no such path\n");
      }
    });
  };
}

async function listen(server: Server): Promise<number> {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return (server.address() as { port: number }).port;
}

export async function startEgressTestServers(): Promise<EgressTestServers> {
  const dir = scratchDir("egress-servers");
  const certFile = join(dir, "secure.test.crt");
  const keyFile = join(dir, "secure.test.key");
  execFileSync(
    "openssl",
    [
      ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"],
      ...["-subj", "/CN=secure.test", "-addext", "subjectAltName=DNS:secure.test"],
      ...["-keyout", keyFile, "-out", certFile],
    ],
    { stdio: "ignore" },
  );
  const seen: IncomingHttpHeaders[] = [];
  const http = createHttpServer(answer(seen));
  const https = createHttpsServer({ key: readFileSync(keyFile), cert: readFileSync(certFile) }, answer(seen));
  const [httpPort, httpsPort] = await Promise.all([listen(http), listen(https)]);
  return {
    httpPort,
    httpsPort,
    certificate: readFileSync(certFile, "utf8"),
    certificateFile: certFile,
    seen,
    resolveVariable: "data.test=127.0.0.1,secure.test=127.0.0.1,other.test=127.0.0.1",
    close: async () => {
      for (const server of [http, https]) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  };
}

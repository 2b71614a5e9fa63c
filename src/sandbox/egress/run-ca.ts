import { generateKeyPairSync, randomBytes } from "node:crypto";
import { isIP } from "node:net";
import forge from "node-forge";

/**
 * A certificate authority of one run, for the proxy to end the TLS of the hosts whose entry says
 * `tls: "terminate"` (and so add their headers to HTTPS requests). Its key lives only in this
 * process; its certificate is installed in that run's sandbox alone, and expires with the day.
 * node-forge builds the certificates (Node can make keys but not certificates); Node makes the keys.
 */
export interface RunCertificateAuthority {
  /** The CA's certificate, PEM: what the run's programs trust. */
  certificate: string;
  /** A certificate (and its key, PEM) for `host` signed by the CA; one per host, made on first need. */
  issue(host: string): { key: string; cert: string };
}

const LIFETIME_MS = 24 * 60 * 60 * 1000;

export function createRunCertificateAuthority(now = new Date()): RunCertificateAuthority {
  const caKeys = rsaKeys();
  const caName = [
    { name: "commonName", value: "selfheal run CA" },
    { name: "organizationName", value: `selfheal run ${randomBytes(4).toString("hex")}` },
  ];
  const ca = certificate(caKeys.publicKey, caName, caName, now);
  ca.setExtensions([
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  ca.sign(caKeys.privateKey, forge.md.sha256.create());
  const caKeyIdentifier = ca.generateSubjectKeyIdentifier().getBytes();
  // One key for every host of the run: the certificates differ, the key is the run's.
  const leafKeys = rsaKeys();
  const leafKeyPem = forge.pki.privateKeyToPem(leafKeys.privateKey);
  const issued = new Map<string, { key: string; cert: string }>();
  return {
    certificate: forge.pki.certificateToPem(ca),
    issue(host) {
      const known = issued.get(host);
      if (known) return known;
      const leaf = certificate(leafKeys.publicKey, [{ name: "commonName", value: host }], caName, now);
      leaf.setExtensions([
        { name: "basicConstraints", cA: false, critical: true },
        { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
        { name: "extKeyUsage", serverAuth: true },
        { name: "subjectAltName", altNames: [isIP(host) ? { type: 7, ip: host } : { type: 2, value: host }] },
        { name: "subjectKeyIdentifier" },
        { name: "authorityKeyIdentifier", keyIdentifier: caKeyIdentifier },
      ]);
      leaf.sign(caKeys.privateKey, forge.md.sha256.create());
      const made = { key: leafKeyPem, cert: forge.pki.certificateToPem(leaf) };
      issued.set(host, made);
      return made;
    },
  };
}

/** A 2048-bit RSA pair made by Node (forge's own, in JavaScript, takes seconds), as forge's objects. */
function rsaKeys(): { privateKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey } {
  const { privateKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs1", format: "pem" },
    publicKeyEncoding: { type: "pkcs1", format: "pem" },
  });
  const key = forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey;
  return { privateKey: key, publicKey: forge.pki.setRsaPublicKey(key.n, key.e) };
}

function certificate(
  publicKey: forge.pki.rsa.PublicKey,
  subject: forge.pki.CertificateField[],
  issuer: forge.pki.CertificateField[],
  now: Date,
): forge.pki.Certificate {
  const made = forge.pki.createCertificate();
  made.publicKey = publicKey;
  // Positive and unique: a leading zero byte keeps the DER integer from reading as negative.
  made.serialNumber = `00${randomBytes(16).toString("hex")}`;
  made.validity.notBefore = new Date(now.getTime() - 60 * 60 * 1000);
  made.validity.notAfter = new Date(now.getTime() + LIFETIME_MS);
  made.setSubject(subject);
  made.setIssuer(issuer);
  return made;
}

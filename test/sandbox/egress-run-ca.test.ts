import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createRunCertificateAuthority } from "../../src/sandbox/egress/run-ca.js";

describe("a run's certificate authority", () => {
  const now = new Date("2026-12-06T12:00:00Z");
  const ca = createRunCertificateAuthority(now);
  const authority = new X509Certificate(ca.certificate);

  it("is a CA for a day, and issues a server certificate for each host it signs", () => {
    expect(authority.ca).toBe(true);
    expect(new Date(authority.validTo).getTime()).toBe(now.getTime() + 24 * 60 * 60 * 1000);
    const { cert } = ca.issue("api.example.org");
    const leaf = new X509Certificate(cert);
    expect(leaf.ca).toBe(false);
    expect(leaf.verify(authority.publicKey)).toBe(true);
    expect(leaf.checkIssued(authority)).toBe(true);
    expect(leaf.checkHost("api.example.org")).toBe("api.example.org");
    expect(leaf.checkHost("other.example.org")).toBeUndefined();
    expect(leaf.subjectAltName).toBe("DNS:api.example.org");
  });

  it("gives one host the same certificate, and two CAs share nothing", () => {
    expect(ca.issue("a.example.org")).toBe(ca.issue("a.example.org"));
    const other = new X509Certificate(createRunCertificateAuthority(now).certificate);
    expect(new X509Certificate(ca.issue("a.example.org").cert).verify(other.publicKey)).toBe(false);
    expect(other.serialNumber).not.toBe(authority.serialNumber);
  });
});

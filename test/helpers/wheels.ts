import { execFileSync } from "node:child_process";

/**
 * Writes a pure-Python wheel by hand (a zip with a dist-info), so no index and no build backend
 * is needed: pip installs it from a `--find-links` folder with `--no-index`, as an air-gapped user would.
 */
export function buildWheel(folder: string, name: string, source: string): void {
  const script = `
import base64, hashlib, sys, zipfile
folder, name, source = sys.argv[1:4]
dist = f"{name}-1.0.dist-info"
files = {
    f"{name}/__init__.py": source,
    f"{dist}/METADATA": f"Metadata-Version: 2.1\\nName: {name.replace('_', '-')}\\nVersion: 1.0\\n",
    f"{dist}/WHEEL": "Wheel-Version: 1.0\\nGenerator: selfheal-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = []
with zipfile.ZipFile(f"{folder}/{name}-1.0-py3-none-any.whl", "w") as wheel:
    for path, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
        wheel.writestr(path, data)
    record.append(f"{dist}/RECORD,,")
    wheel.writestr(f"{dist}/RECORD", "\\n".join(record) + "\\n")
`;
  execFileSync("python3", ["-c", script, folder, name, source]);
}

import { safeRelativePath } from "../host/work-dir.js";
import type { InputFile } from "../types.js";

/**
 * A minimal ustar archive of regular files; enough for `tar -x` in any image. The read-only files
 * (inputs, mode 0444) come first, so the code, written last, wins a clash as on the local backends.
 */
export function encodeTar(files: Record<string, string>, readOnly: readonly InputFile[] = []): Buffer {
  const blocks: Buffer[] = [];
  const entries = [
    ...readOnly.map((input) => ({ rawName: input.name, body: Buffer.from(input.content), mode: "0000444" })),
    ...Object.entries(files).map(([rawName, content]) => ({
      rawName,
      body: Buffer.from(content, "utf8"),
      mode: "0000644",
    })),
  ];
  for (const { rawName, body, mode } of entries) {
    const name = safeRelativePath(rawName);
    if (Buffer.byteLength(name) > 100) throw new Error(`file name too long for the container sandbox: ${name}`);
    const header = Buffer.alloc(512);
    header.write(name, 0, 100, "utf8");
    header.write(`${mode}\0`, 100, "ascii");
    header.write("0000000\0", 108, "ascii");
    header.write("0000000\0", 116, "ascii");
    header.write(`${body.length.toString(8).padStart(11, "0")}\0`, 124, "ascii");
    header.write(
      `${Math.floor(Date.now() / 1000)
        .toString(8)
        .padStart(11, "0")}\0`,
      136,
      "ascii",
    );
    header.write("        ", 148, "ascii");
    header.write("0", 156, "ascii");
    header.write("ustar\0", 257, "ascii");
    header.write("00", 263, "ascii");
    let checksum = 0;
    for (const byte of header) checksum += byte;
    header.write(`${checksum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
    blocks.push(header, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

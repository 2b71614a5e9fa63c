import { existsSync } from "node:fs";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { skipReason } from "./capabilities.js";

/** Debian's `chromium` package; CI installs it (.ci/run) and requires it (SELFHEAL_TEST_REQUIRE_CHROMIUM). */
export const CHROMIUM = process.env.SELFHEAL_CHROMIUM ?? "/usr/bin/chromium";

/** Why the browser tests cannot run here, or null; under the require flag a missing Chromium throws. */
export function chromiumMissing(): string | null {
  return skipReason("chromium", existsSync(CHROMIUM) ? null : `no Chromium at ${CHROMIUM} (apt-get install chromium)`);
}

/** Headless Chromium for the report tests. Root (CI, this machine) cannot use Chromium's own sandbox; the pages are our own files. */
export function launchChromium(): Promise<Browser> {
  return puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
}

/** Every pixel of a PNG as a six-digit hex colour, read by the browser itself. */
export function pngColours(page: Page, png: string): Promise<string[]> {
  return page.evaluate(async (data) => {
    const image = new Image();
    image.src = `data:image/png;base64,${data}`;
    await image.decode();
    const canvas = document.createElement("canvas");
    canvas.width = image.width;
    canvas.height = image.height;
    const context = canvas.getContext("2d")!;
    context.drawImage(image, 0, 0);
    const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
    const seen: string[] = [];
    for (let index = 0; index < pixels.length; index += 4) {
      seen.push(
        ((pixels[index]! << 16) | (pixels[index + 1]! << 8) | pixels[index + 2]!).toString(16).padStart(6, "0"),
      );
    }
    return seen;
  }, png);
}

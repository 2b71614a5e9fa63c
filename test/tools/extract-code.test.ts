import { describe, expect, it } from "vitest";
import { extractCode } from "../../src/tools/extract-code.js";

describe("extractCode", () => {
  it("takes a block tagged with the language", () => {
    expect(extractCode("Here:\n```python\nprint(1)\n```\nDone.", "python").code).toBe("print(1)\n");
  });

  it("takes an untagged block", () => {
    expect(extractCode("```\nx = 2\nprint(x)\n```", "python").code).toBe("x = 2\nprint(x)\n");
  });

  it("accepts py and js short tags", () => {
    expect(extractCode("```py\nprint(3)\n```", "python").code).toBe("print(3)\n");
    expect(extractCode("```js\nconsole.log(3)\n```", "javascript").code).toBe("console.log(3)\n");
  });

  it("picks the block for the language among several", () => {
    const reply =
      "```bash\npip install nothing-at-all-here\n```\n```python\nprint('the program')\n```\n```text\noutput\n```";
    expect(extractCode(reply, "python").code).toBe("print('the program')\n");
    const mixed = "```python\nprint(1)\n```\n```javascript\nconsole.log(1)\n```";
    expect(extractCode(mixed, "javascript").code).toBe("console.log(1)\n");
  });

  it("picks the longest block when none is tagged for the language", () => {
    const reply = "```text\nshort\n```\n```sh\necho a much longer block of text here\n```";
    expect(extractCode(reply, "python").code).toBe("echo a much longer block of text here\n");
  });

  it("picks the longest of several blocks tagged for the language", () => {
    const reply =
      "```python\nprint(1)\n```\nand the full program:\n```python\ndef f():\n    return 2\n\nprint(f())\n```";
    expect(extractCode(reply, "python").code).toBe("def f():\n    return 2\n\nprint(f())\n");
  });

  it("reads an unterminated fence to the end of the reply", () => {
    expect(extractCode("Sure:\n```python\ndef f():\n    return 1\nprint(f())", "python").code).toBe(
      "def f():\n    return 1\nprint(f())\n",
    );
  });

  it("keeps nested fences of a different length inside a longer fence", () => {
    const reply = "````python\ns = '''\n```\n'''\nprint(s)\n````";
    expect(extractCode(reply, "python").code).toBe("s = '''\n```\n'''\nprint(s)\n");
  });

  it("uses bare code with no fence", () => {
    expect(extractCode("def add(a, b):\n    return a + b\n\nprint(add(1, 2))", "python").code).toBe(
      "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n",
    );
    expect(extractCode("const x = 1;\nconsole.log(x);", "javascript").code).toBe("const x = 1;\nconsole.log(x);\n");
  });

  it("reports a reply with no code as a problem, not a crash", () => {
    const prose = extractCode("I am sorry, but I cannot write that program for you today.", "python");
    expect(prose.code).toBeNull();
    expect(prose.problem).toMatch(/no python code/);
    const empty = extractCode("   \n", "python");
    expect(empty.code).toBeNull();
    expect(empty.problem).toMatch(/empty/);
    expect(extractCode("```python\n\n```", "python").code).toBeNull();
  });

  it("reports a python block for a javascript task as the wrong language, not as code to run", () => {
    const reply = extractCode("Here you go:\n```python\nprint('hello')\n```", "javascript");
    expect(reply.code).toBeNull();
    expect(reply.problem).toMatch(/^The reply has a python block but the task is javascript: /);
    expect(reply.problem).toContain("```javascript");
  });

  it("reports a js block for a python task as the wrong language", () => {
    const reply = extractCode("```js\nconsole.log('hello')\n```", "python");
    expect(reply.code).toBeNull();
    expect(reply.problem).toMatch(/^The reply has a javascript block but the task is python: /);
  });

  it("reports the wrong language even beside a block tagged with no programming language", () => {
    const reply = extractCode(
      "```text\nhello\n```\n```py\nprint('hello from a much longer python block')\n```",
      "javascript",
    );
    expect(reply.code).toBeNull();
    expect(reply.problem).toMatch(/python block but the task is javascript/);
  });

  it("counts an untagged block as the task's language, beside a block in the other language", () => {
    expect(extractCode("```python\nprint(1)\n```\n```\nconsole.log(1)\n```", "javascript").code).toBe(
      "console.log(1)\n",
    );
    expect(extractCode("```\nconsole.log(2)\n```", "javascript").code).toBe("console.log(2)\n");
  });

  it("strips the list-item indentation of a fence nested under a numbered item", () => {
    const reply = "1. The answer:\n\n   ```python\n   def f():\n       return 1\n   ```\n";
    expect(extractCode(reply, "python").code).toBe("def f():\n    return 1\n");
  });

  it("takes the last block that defines the task's function among worked examples", () => {
    const reply =
      "1. Similar problem:\n   ```python\n   def add_all(xs):\n       return sum(xs) + 0 + 0 + 0 + 0\n   ```\n" +
      "2. Another:\n   ```python\n   def has_close(xs):\n       return False  # a long worked example\n   ```\n" +
      "Now the task.\n\n```python\ndef target(x):\n    return x\n```\n";
    const result = extractCode(reply, "python", ["target"]);
    expect(result.code).toBe("def target(x):\n    return x\n");
    expect(result.choice).toMatch(/block 3 of 3.*defines `target`/);
  });

  it("keeps the answer given first over a test block after it", () => {
    const reply =
      "```python\ndef target(x):\n    return x\n```\nTests:\n```python\nassert target(1) == 1\nassert target(2) == 2\nprint('ok')\n```";
    expect(extractCode(reply, "python", ["target"]).code).toBe("def target(x):\n    return x\n");
    expect(extractCode(reply, "python").code).toBe("def target(x):\n    return x\n");
  });

  it("merges an imports-only block with the function after it", () => {
    const reply = "```python\nimport math\n```\nThen:\n```python\ndef target(x):\n    return math.sqrt(x)\n```";
    const result = extractCode(reply, "python", ["target"]);
    expect(result.code).toBe("import math\n\ndef target(x):\n    return math.sqrt(x)\n");
    expect(result.choice).toMatch(/imports-only/);
  });
});

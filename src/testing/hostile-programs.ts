/**
 * The programs of the hostile-code suite (hostile.ts). Each bounds itself (forks, bytes, files,
 * seconds), so a sandbox that contains nothing still cannot hurt the machine running the suite.
 */

/** The fork bomb stops by itself after this many children. */
export const FORK_BOMB_CEILING = 200;
/** The disk cases stop by themselves here: 200 MiB and 20 000 files, far over any run's bound. */
export const DISK_FILL_CEILING_MIB = 200;
export const INODE_FILL_CEILING = 20_000;
/** The memory bomb stops by itself after this many times the run's memoryMb. */
export const MEMORY_BOMB_FACTOR = 4;

/** Forks children that each exec a sleep carrying `marker`, until refused or the ceiling; prints how many. */
export function forkBombProgram(marker: string): string {
  return [
    "import os",
    "forks = 0",
    `for _ in range(${FORK_BOMB_CEILING}):`,
    "    try:",
    "        pid = os.fork()",
    "    except OSError:",
    "        break",
    "    if pid == 0:",
    "        try:",
    `            os.execv("/bin/sleep", ["sleep", "${marker}"])`,
    "        finally:",
    "            os._exit(0)",
    "    forks += 1",
    "print(forks, flush=True)",
  ].join("\n");
}

/** Takes 32 MiB blocks until it holds `MEMORY_BOMB_FACTOR` times `memoryMb`, then says it escaped. */
export function memoryBombProgram(memoryMb: number): string {
  const blocks = Math.ceil((memoryMb * MEMORY_BOMB_FACTOR) / 32);
  return `blocks = []\nfor _ in range(${blocks}):\n    blocks.append(bytearray(32 * 1024 * 1024))\nprint('escaped')\n`;
}

/** Four children each hold `shareMb` at once for 3 s, then it prints the total held. */
export function memorySpreadProgram(shareMb: number): string {
  return [
    "import os, time",
    "children = []",
    "for _ in range(4):",
    "    pid = os.fork()",
    "    if pid == 0:",
    `        held = b"\\x01" * (${shareMb} * 1024 * 1024)`,
    "        time.sleep(3)",
    "        os._exit(0)",
    "    children.append(pid)",
    "for pid in children:",
    "    os.waitpid(pid, 0)",
    `print('held', len(children) * ${shareMb}, 'MiB')`,
  ].join("\n");
}

/** Three children each burn `shareSeconds` of CPU time, then it prints "burnt them all". */
export function cpuSpreadProgram(shareSeconds: string): string {
  return [
    "import os, time",
    "children = []",
    "for _ in range(3):",
    "    pid = os.fork()",
    "    if pid == 0:",
    `        end = time.process_time() + ${shareSeconds}`,
    "        while time.process_time() < end:",
    "            pass",
    "        os._exit(0)",
    "    children.append(pid)",
    "for pid in children:",
    "    os.waitpid(pid, 0)",
    "print('burnt them all')",
  ].join("\n");
}

/**
 * A Python program that writes 1 MiB files into `folder` (relative, "" for the work dir) until
 * `ceiling` of them or the first error, and prints how many it wrote and the error's errno name.
 */
export function diskFillProgram(folder: string, ceiling: number): string {
  return [
    "import errno",
    "block = b'x' * (1024 * 1024)",
    "written = 0",
    "failure = 'none'",
    `for index in range(${ceiling}):`,
    "    try:",
    `        with open(f'${folder}fill-{index}.bin', 'wb') as handle:`,
    "            handle.write(block)",
    "        written += 1",
    "    except OSError as error:",
    "        failure = errno.errorcode.get(error.errno, str(error.errno))",
    "        break",
    "print(written, failure)",
  ].join("\n");
}

/** Makes empty files in /tmp until refused or the ceiling, removes them itself, and prints how many and why it stopped. */
export const INODE_FILL_PROGRAM = [
  "import errno, os, shutil, tempfile",
  "made = 0",
  "failure = 'none'",
  "directory = tempfile.mkdtemp(prefix='selfheal-inode-fill-', dir='/tmp')",
  `for index in range(${INODE_FILL_CEILING}):`,
  "    try:",
  "        os.close(os.open(f'{directory}/{index}', os.O_CREAT | os.O_WRONLY, 0o600))",
  "        made += 1",
  "    except OSError as error:",
  "        failure = errno.errorcode.get(error.errno, str(error.errno))",
  "        break",
  "shutil.rmtree(directory, ignore_errors=True)",
  "print(made, failure)",
].join("\n");

/**
 * Calls a system call the sandbox must refuse with harmless arguments (a no-op `unshare(0)`, a
 * zeroed io_uring setup, PTRACE_TRACEME) and prints what each returned, as `{name: "EPERM"}` or
 * `{name: "ok"}`. The arguments stay harmless even as root without a filter (the process backend):
 * kexec_load gets one segment at NULL (EFAULT) rather than none, which would unload a crash kernel.
 */
export const SYSCALL_PROBE = `
import ctypes, errno, json, os, platform
libc = ctypes.CDLL(None, use_errno=True)
numbers = {
    "x86_64": dict(ptrace=101, process_vm_readv=310, mount=165, umount2=166, pivot_root=155, unshare=272, setns=308,
                   keyctl=250, add_key=248, bpf=321, perf_event_open=298, userfaultfd=323, kexec_load=246,
                   init_module=175, delete_module=176, reboot=169, swapon=167, io_uring_setup=425, clone3=435),
    "aarch64": dict(ptrace=117, process_vm_readv=270, mount=40, umount2=39, pivot_root=41, unshare=97, setns=268,
                    keyctl=219, add_key=217, bpf=280, perf_event_open=241, userfaultfd=282, kexec_load=104,
                    init_module=105, delete_module=106, reboot=142, swapon=224, io_uring_setup=425, clone3=435),
}.get(platform.machine(), {})
buffer = ctypes.create_string_buffer(256)
args = dict(ptrace=(0, 0, 0, 0), process_vm_readv=(os.getpid(), 0, 0, 0, 0, 0), mount=(0, 0, 0, 0, 0), umount2=(0, 0),
            pivot_root=(0, 0), unshare=(0,), setns=(-1, 0), keyctl=(0, -3, 0), add_key=(0, 0, 0, 0, 0), bpf=(0, 0, 0),
            perf_event_open=(0, 0, -1, -1, 0), userfaultfd=(0,), kexec_load=(0, 1, 0, 0), init_module=(0, 0, 0),
            delete_module=(0, 0), reboot=(0, 0, 0, 0), swapon=(0, 0), io_uring_setup=(1, buffer), clone3=(0, 0))
results = {}
for name, number in numbers.items():
    ctypes.set_errno(0)
    returned = libc.syscall(number, *args[name])
    results[name] = errno.errorcode.get(ctypes.get_errno(), "ok") if returned == -1 else "ok"
    if returned > 2 and name in ("io_uring_setup", "userfaultfd", "perf_event_open"):
        os.close(returned)
print(json.dumps(results))
`;

/** Starts a sleep carrying `marker` in a new session, and prints "spawned". */
export function setsidProgram(marker: string): string {
  return `import subprocess\nsubprocess.Popen(["setsid", "sleep", "${marker}"], start_new_session=True)\nprint("spawned")\n`;
}

/** The classic daemon: fork, setsid, fork again, exec a sleep carrying `marker`; prints "daemonised". */
export function doubleForkProgram(marker: string): string {
  return [
    "import os",
    "if os.fork() == 0:",
    "    os.setsid()",
    "    if os.fork() == 0:",
    `        os.execv("/bin/sleep", ["sleep", "${marker}"])`,
    "    os._exit(0)",
    "os.wait()",
    "print('daemonised')",
  ].join("\n");
}

/** Tries to write "pwned" to each target, silently ignoring refusals. */
export function writeTargetsProgram(language: "python" | "javascript", targets: readonly string[]): string {
  return language === "python"
    ? `for target in ${JSON.stringify(targets)}:\n    try:\n        with open(target, 'w') as handle:\n            handle.write('pwned')\n    except OSError:\n        pass\n`
    : `const fs = require("fs");\nfor (const target of ${JSON.stringify(targets)}) {\n  try { fs.writeFileSync(target, "pwned"); } catch {}\n}\n`;
}

/** Connects to the host's listener on 127.0.0.1:`port`; prints "connected" or "blocked" and why. */
export function connectProgram(language: "python" | "javascript", port: number): string {
  return language === "python"
    ? [
        "import socket",
        "try:",
        `    socket.create_connection(("127.0.0.1", ${port}), timeout=2).sendall(b"leak")`,
        "    print('connected')",
        "except OSError as error:",
        "    print('blocked', error)",
      ].join("\n")
    : [
        'const net = require("net");',
        `const socket = net.connect(${port}, "127.0.0.1");`,
        'socket.on("connect", () => { console.log("connected"); socket.end("leak"); });',
        'socket.on("error", (error) => console.log("blocked", error.code));',
      ].join("\n");
}

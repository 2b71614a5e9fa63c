/** True when dist/ carries the stamp of a build that started after the last change under src/. */
export function builtFromSource(): boolean;

"use strict";
// The public types of `rlock` that are not classes: options, error codes, the records of
// describe, list and stats, and the lost event. Types only (tsc writes an empty lib/types.js);
// the blocks between the GENERATED markers are written by `make generated` from core.
Object.defineProperty(exports, "__esModule", { value: true });
// END GENERATED

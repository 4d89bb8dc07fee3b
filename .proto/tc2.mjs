import ts from 'typescript';
import { readFileSync } from 'node:fs';
const src = readFileSync('.proto/tc.mjs', 'utf8');

'use strict'
// The parity table, docs/parity.json: one row per operation of every primitive, with its name,
// parameters and result on each surface. This checks Node's column by introspection: every
// name is declared on its class in the package's types (rlock.d.ts and the lib/*.d.ts tsc emits
// from the wrapper's TypeScript; read with the TypeScript compiler's parser) with those
// parameters and that result type, and exists at run time on the class rlock.js exports.
// RLOCK_PARITY_WRITE=1 writes what is found into the table instead (after a deliberate API
// change; review the diff). The second test runs the check the other way, code to table.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const ts = require('typescript')
const rlock = require('../rlock.js')

const TABLE = path.join(__dirname, '..', '..', 'docs', 'parity.json')
const LIB = path.join(__dirname, '..', 'lib')
/** The declaration files tsc emits for the wrapper. */
const DTS = fs.readdirSync(LIB).filter((f) => f.endsWith('.d.ts')).map((f) => path.join(LIB, f))

/** The top-level statements of every declaration file. */
function statements() {
  return DTS.flatMap((f) => ts.createSourceFile(f, fs.readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, true).statements)
}

/** Every class the package exports: name -> { member name -> { params, returns } }. */
function declared() {
  const classes = new Map()
  for (const st of statements()) {
    if (!ts.isClassDeclaration(st) || !st.name) continue
    // A base class of the wrapper's own (Permits) is read too: its members are the subclasses'.
    if (!(st.name.getText() in rlock) && !DTS.some((f) => fs.readFileSync(f, 'utf8').includes(`extends ${st.name.getText()}<`))) continue
    const members = new Map()
    for (const m of st.members) {
      // What users cannot call: private and protected members, #private fields.
      if (m.modifiers?.some((x) => x.kind === ts.SyntaxKind.PrivateKeyword || x.kind === ts.SyntaxKind.ProtectedKeyword)) continue
      if (m.name && ts.isPrivateIdentifier(m.name)) continue
      const params = (m.parameters || []).map((p) => (p.dotDotDotToken ? '...' : '') + p.name.getText())
      if (ts.isConstructorDeclaration(m)) members.set('constructor', { params, returns: '' })
      else if (ts.isMethodDeclaration(m)) members.set(m.name.getText(), { params, returns: m.type ? m.type.getText() : '' })
      else if (ts.isPropertyDeclaration(m) || ts.isGetAccessor(m)) {
        members.set(m.name.getText(), { params: ['(property)'], returns: m.type ? m.type.getText() : '' })
      }
    }
    const base = st.heritageClauses?.find((h) => h.token === ts.SyntaxKind.ExtendsKeyword)?.types[0]?.expression.getText()
    classes.set(st.name.getText(), { members, base })
  }
  return classes
}

/** The functions the package exports. */
function declaredFunctions() {
  return statements().filter((st) => ts.isFunctionDeclaration(st) && st.name && st.name.getText() in rlock)
    .map((st) => st.name.getText())
}

/** The declaration of `Class.member`, looked up through the classes it extends. */
function lookUp(classes, name) {
  let [cls, member] = name.split('.')
  for (let c = classes.get(cls); c; c = classes.get(c.base)) {
    if (c.members.has(member)) return c.members.get(member)
  }
  return undefined
}

test('the Node column of docs/parity.json is what rlock declares and has', () => {
  const table = JSON.parse(fs.readFileSync(TABLE, 'utf8'))
  const classes = declared()
  const write = process.env.RLOCK_PARITY_WRITE === '1'
  const wrong = []
  for (const row of table.rows) {
    const cell = row.node
    if (cell.absent) continue
    const [cls, member] = cell.name.split('.')
    const found = lookUp(classes, cell.name)
    assert.ok(found, `${row.primitive}, ${row.operation}: the package's types declare no ${cell.name}`)
    const Class = rlock[cls]
    assert.equal(typeof Class, 'function', `rlock.js exports no class ${cls}`)
    if (member !== 'constructor' && found.params[0] !== '(property)') {
      assert.equal(typeof Class.prototype[member], 'function', `${cell.name} is not a method at run time`)
    }
    if (write) Object.assign(cell, found)
    else if (JSON.stringify([cell.params, cell.returns]) !== JSON.stringify([found.params, found.returns])) {
      wrong.push(`${cell.name}: table ${JSON.stringify(cell.params)} -> ${cell.returns}, types ${JSON.stringify(found.params)} -> ${found.returns}`)
    }
  }
  if (write) fs.writeFileSync(TABLE, JSON.stringify(table, null, 1) + '\n')
  assert.deepEqual(wrong, [], "docs/parity.json's Node column differs")
})

// The rule of tools/parity.py's uncovered(), in JavaScript: a public name is in a row, is the
// same declaration as a name in a row (reached through `extends`), or is in an unlisted group
// (`*.member`: that member on every class; `Class.*`: every member of a class that is no
// primitive); an unlisted name must still be public.
test('every public name of the package\'s types has a row of docs/parity.json or a reason', () => {
  const table = JSON.parse(fs.readFileSync(TABLE, 'utf8'))
  const classes = declared()
  const named = new Set(table.rows.filter((r) => r.node.name).map((r) => r.node.name))
  const unlisted = new Set((table.unlisted || []).flatMap((g) => g.node || []))
  const publicNames = declaredFunctions().map((f) => `rlock.${f}`)
  for (const [cls, { members, base }] of classes) {
    if (base === 'Error' || base === 'RLockError' || !(cls in rlock)) continue
    const all = new Set(members.keys())
    for (let c = classes.get(base); c; c = classes.get(c.base)) for (const m of c.members.keys()) all.add(m)
    for (const m of all) publicNames.push(`${cls}.${m}`)
  }
  // The same declaration as a name a row or an unlisted group has, reached through `extends`.
  const inherited = (name) => {
    const member = name.split('.')[1]
    const found = lookUp(classes, name)
    const known = [...named, ...unlisted].filter((n) => n.split('.')[1] === member && !n.startsWith('*.'))
    return found !== undefined && known.some((n) => lookUp(classes, n) === found)
  }
  const problems = []
  for (const name of publicNames) {
    const [owner, member] = name.split('.')
    const listed = [name, `*.${member}`, `${owner}.*`].some((n) => named.has(n) || unlisted.has(n))
    if (!listed && !inherited(name)) problems.push(`node: ${name} is public but in no row and in no unlisted group`)
  }
  for (const name of unlisted) {
    const [owner, member] = name.split('.')
    let gone
    if (owner === '*') gone = !publicNames.some((n) => n.split('.')[1] === member)
    else if (member === '*') gone = !publicNames.some((n) => n.split('.')[0] === owner)
    else gone = !publicNames.includes(name)
    if (gone) problems.push(`node: unlisted ${name} is not public any more`)
  }
  assert.deepEqual(problems, [])
})

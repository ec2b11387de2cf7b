'use strict'
// The parity table, docs/parity.json: one row per operation of every primitive, with its name,
// parameters and result on each surface. This checks Node's column by introspection: every
// name is declared on its class in rlock.d.ts with those parameters and that result type (read
// with the TypeScript compiler's parser), and exists at run time on the class rlock.js exports.
// RLOCK_PARITY_WRITE=1 writes what is found into the table instead (after a deliberate API
// change; review the diff).

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const ts = require('typescript')
const rlock = require('../rlock.js')

const TABLE = path.join(__dirname, '..', '..', 'docs', 'parity.json')
const DTS = path.join(__dirname, '..', 'rlock.d.ts')

/** Every class of rlock.d.ts: name -> { member name -> { params, returns } }. */
function declared() {
  const source = ts.createSourceFile(DTS, fs.readFileSync(DTS, 'utf8'), ts.ScriptTarget.Latest, true)
  const classes = new Map()
  for (const st of source.statements) {
    if (!ts.isClassDeclaration(st) || !st.name) continue
    const members = new Map()
    for (const m of st.members) {
      const params = (m.parameters || []).map((p) => (p.dotDotDotToken ? '...' : '') + p.name.getText())
      if (ts.isConstructorDeclaration(m)) members.set('constructor', { params, returns: '' })
      else if (ts.isMethodDeclaration(m)) members.set(m.name.getText(), { params, returns: m.type ? m.type.getText() : '' })
      else if (ts.isPropertyDeclaration(m) || ts.isGetAccessor(m)) {
        members.set(m.name.getText(), { params: ['(property)'], returns: m.type ? m.type.getText() : '' })
      }
    }
    const base = st.heritageClauses?.find((h) => h.token === ts.SyntaxKind.ExtendsKeyword)?.types[0]?.getText()
    classes.set(st.name.getText(), { members, base })
  }
  return classes
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
    assert.ok(found, `${row.primitive}, ${row.operation}: rlock.d.ts declares no ${cell.name}`)
    const Class = rlock[cls]
    assert.equal(typeof Class, 'function', `rlock.js exports no class ${cls}`)
    if (member !== 'constructor' && found.params[0] !== '(property)') {
      assert.equal(typeof Class.prototype[member], 'function', `${cell.name} is not a method at run time`)
    }
    if (write) Object.assign(cell, found)
    else if (JSON.stringify([cell.params, cell.returns]) !== JSON.stringify([found.params, found.returns])) {
      wrong.push(`${cell.name}: table ${JSON.stringify(cell.params)} -> ${cell.returns}, rlock.d.ts ${JSON.stringify(found.params)} -> ${found.returns}`)
    }
  }
  if (write) fs.writeFileSync(TABLE, JSON.stringify(table, null, 1) + '\n')
  assert.deepEqual(wrong, [], "docs/parity.json's Node column differs")
})

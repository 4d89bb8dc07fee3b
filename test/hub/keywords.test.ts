// src/hub/keywords.ts: the word index behind directory search and routing.
import { describe, expect, it } from 'vitest';
import { KeywordIndex, words } from '../../src/hub/keywords.js';

const entry = (name: string, description: string) => [
  { field: 'name', text: name, weight: 2 },
  { field: 'description', text: description, weight: 1 },
];

describe('KeywordIndex', () => {
  it('scores by idf × field weight, says why, and breaks ties by id', () => {
    const index = new KeywordIndex();
    index.set('b', entry('Weather', 'Forecasts for cities.'));
    index.set('a', entry('Weather', 'Forecasts for cities.'));
    index.set('c', entry('Trains', 'Timetables, and the weather on the way.'));
    const found = index.search('weather forecast');
    expect(found.map((hit) => hit.id)).toEqual(['a', 'b', 'c']);
    expect(found[0]!.matches).toEqual([
      { word: 'weather', field: 'name' },
      { word: 'forecast', field: 'description' },
    ]);
    expect(found[0]!.score).toBeGreaterThan(found[2]!.score);
    expect(words('Forecasts for the Class of cities')).toEqual(['forecast', 'class', 'city']);
  });

  it('reads a bounded number of postings per word, yet scores every candidate on every word', () => {
    const index = new KeywordIndex({ scanPerWord: 4 });
    // 50 entries share "data"; one of them, and only it, also says "rare".
    for (let number = 0; number < 50; number++)
      index.set(`e${String(number).padStart(2, '0')}`, entry(`agent ${number}`, number === 42 ? 'rare data' : 'data'));
    const found = index.search('rare data', 3);
    expect(found[0]).toMatchObject({
      id: 'e42',
      matches: [
        { word: 'rare', field: 'description' },
        { word: 'data', field: 'description' },
      ],
    });
    // "data" alone brings its best-weighted postings (ties by id), never all 50.
    expect(index.search('data', 3).map((hit) => hit.id)).toEqual(['e00', 'e01', 'e02']);
  });

  it('keeps each list ordered best weight first through updates and deletes', () => {
    const index = new KeywordIndex({ scanPerWord: 1 });
    index.set('low', entry('other', 'weather'));
    index.set('high', entry('weather', 'other'));
    expect(index.search('weather', 1).map((hit) => hit.id)).toEqual(['high']);
    index.delete('high');
    expect(index.search('weather', 1).map((hit) => hit.id)).toEqual(['low']);
    index.set('low', entry('nothing', 'here'));
    expect(index.search('weather')).toEqual([]);
    expect(index.size).toBe(1);
  });

  it('scores given entries only, and filters with accept', () => {
    const index = new KeywordIndex();
    index.set('x', entry('Weather', ''));
    index.set('y', entry('Weather', ''));
    index.set('z', entry('Trains', ''));
    expect(index.score('weather', ['y', 'z', 'missing']).map((hit) => hit.id)).toEqual(['y']);
    expect(index.search('weather', 10, (id) => id !== 'x').map((hit) => hit.id)).toEqual(['y']);
  });
});

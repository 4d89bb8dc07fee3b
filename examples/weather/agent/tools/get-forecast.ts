import { defineTool, z } from 'agora-agents';
import { forecast } from '../../data.js';

// The weather agent's one capability. Its description names every field, so an LLM can tell what it serves.
export default defineTool({
  name: 'get_forecast',
  description:
    'The forecast for a city on a date (YYYY-MM-DD): {"weather": string, "precipitation": number}, precipitation being the chance of rain or snow in % (0..100). Fails with "Unsupported location" for a city it does not know.',
  input: z.object({ city: z.string().describe('City name, e.g. Paris'), date: z.string().describe('YYYY-MM-DD') }),
  run: ({ city, date }) => forecast(city, date),
});
